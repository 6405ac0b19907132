// The CUDA C twins' common prelude: what clang needs to emit PTX without a CUDA toolkit.
// Every kernel takes the tile header (start, count, first), then the block's scalar parameters,
// then its arrays in binding order, exactly as the WGSL form binds them.
#pragma once
#define __global__ __attribute__((global))
#include "__clang_cuda_builtin_vars.h"
#define XC_ITEM(first, count)                                      \
    unsigned i = (first) + blockIdx.x * blockDim.x + threadIdx.x; \
    if (i >= (count))                                              \
        return;
