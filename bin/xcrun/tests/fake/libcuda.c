/* A library named libcuda that is not a driver xcd can use: it has a few of the driver's entry
 * points (as a CUDA 3-era driver or another vendor's shim might) and lacks the rest, among them
 * cuCtxCreate_v2 and cuMemAllocAsync. cudarc looks each entry point up at its first call and
 * panics on a missing one, so xcd checks them all before calling any (tests/fake_driver.rs).
 * The working stand-in driver is fakecuda/, a Rust library that runs kernels. */
typedef int CUresult;
typedef int CUdevice;

CUresult cuInit(unsigned int flags) {
    (void)flags;
    return 0;
}

CUresult cuDeviceGetCount(int *count) {
    *count = 1;
    return 0;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    *device = ordinal;
    return 0;
}

CUresult cuCtxCreate(void **ctx, unsigned int flags, CUdevice device) {
    (void)ctx; (void)flags; (void)device;
    return 0;
}
