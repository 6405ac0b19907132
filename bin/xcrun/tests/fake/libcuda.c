/* A stand-in for NVIDIA's driver library, for tests/fake_driver.rs: just the calls xcd makes
 * before it has a context, answering as FAKE_CUDA says:
 *   stub   what the CUDA toolkit's stub libcuda.so answers: CUDA_ERROR_STUB_LIBRARY (34)
 *   old    two Maxwell cards (compute capability 5.2), older than xcd's PTX
 *   twins  two identical new cards in different slots, whose contexts cannot be made
 * It exists because this machine has no NVIDIA GPU; the real driver is checked by
 * scripts/gpu-check on a machine that has one. */
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
enum { OK = 0, NOT_INITIALIZED = 3, STUB_LIBRARY = 34, INVALID_DEVICE = 101, OPERATING_SYSTEM = 304 };
enum { CC_MAJOR = 75, CC_MINOR = 76 };

static const char *mode(void) {
    const char *m = getenv("FAKE_CUDA");
    return m ? m : "stub";
}

CUresult cuInit(unsigned int flags) {
    (void)flags;
    return strcmp(mode(), "stub") == 0 ? STUB_LIBRARY : OK;
}

CUresult cuDeviceGetCount(int *count) {
    *count = 2;
    return OK;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (ordinal < 0 || ordinal > 1) return INVALID_DEVICE;
    *device = ordinal;
    return OK;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device) {
    (void)device;
    strncpy(name, strcmp(mode(), "old") == 0 ? "Tesla M40" : "NVIDIA H200", (size_t)len - 1);
    name[len - 1] = 0;
    return OK;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    (void)device;
    int old = strcmp(mode(), "old") == 0;
    if (attribute == CC_MAJOR) *value = old ? 5 : 9;
    else if (attribute == CC_MINOR) *value = old ? 2 : 0;
    else *value = 0;
    return OK;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    (void)device;
    *bytes = (size_t)141 << 30;
    return OK;
}

CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice device) {
    strncpy(bus, device == 0 ? "00000000:1B:00.0" : "00000000:43:00.0", (size_t)len - 1);
    bus[len - 1] = 0;
    return OK;
}

CUresult cuCtxCreate_v4(void **ctx, void *params, unsigned int flags, CUdevice device) {
    (void)ctx; (void)params; (void)flags; (void)device;
    return OPERATING_SYSTEM;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
    *text = error == STUB_LIBRARY ? "CUDA driver is a stub library" : "OS call failed or operation not supported on this OS";
    return OK;
}

CUresult cuGetErrorName(CUresult error, const char **text) {
    *text = error == STUB_LIBRARY ? "CUDA_ERROR_STUB_LIBRARY" : "CUDA_ERROR_OPERATING_SYSTEM";
    return OK;
}
