// escape: the CUDA C twin of wgsl/escape.wgsl; see that file.
#include "xc.h"

extern "C" __global__ void escape(unsigned start, unsigned count, unsigned first, unsigned width,
                                  unsigned height, unsigned max_iter, unsigned *counts)
{
    XC_ITEM(first, count)
    unsigned item = start + i;
    float cx = (float)(item % width) * 3.0f / (float)width - 2.0f;
    float cy = (float)(item / width) * 3.0f / (float)height - 1.5f;
    float x = 0.0f;
    float y = 0.0f;
    unsigned n = 0;
    while (n < max_iter && x * x + y * y < 4.0f) {
        float t = x * x - y * y + cx;
        y = 2.0f * x * y + cy;
        x = t;
        n = n + 1;
    }
    counts[i] = n;
}
