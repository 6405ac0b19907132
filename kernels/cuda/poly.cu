// poly: the CUDA C twin of wgsl/poly.wgsl. CUDA cannot ask an array's length, so the form
// reads coefficients up to `terms` and the runtime binds at least that many.
#include "xc.h"

extern "C" __global__ void poly(unsigned start, unsigned count, unsigned first, unsigned terms,
                                const float *x, const float *coef, unsigned coef_len, float *y)
{
    XC_ITEM(first, count)
    float v = x[i];
    float acc = 0.0f;
    for (unsigned k = terms; k > 0;) {
        k = k - 1;
        float c = k < coef_len ? coef[k] : 0.0f;
        acc = acc * v + c;
    }
    y[i] = acc;
}
