// saxpy: the CUDA C twin of wgsl/saxpy.wgsl; see that file.
#include "xc.h"

extern "C" __global__ void saxpy(unsigned start, unsigned count, unsigned first, float a,
                                 const float *x, float *y)
{
    XC_ITEM(first, count)
    y[i] = a * x[i] + y[i];
}
