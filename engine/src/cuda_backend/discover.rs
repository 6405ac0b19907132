//! Finding CUDA devices: the driver library (it must have every entry point xcd calls, and be a
//! CUDA 12 driver), each GPU's name, PCI address, compute capability and compute mode (asked
//! without making a context), and which GPUs the PTX xcd-forms writes can run on. Owns the notes
//! that say why a GPU is not served; opening a device is the parent module's.

use std::path::PathBuf;

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, DriverError, result};
use xcd_wire::device::Naming;
use xcd_wire::{BackendKind, DeviceInfo};

/// Every driver entry point the CUDA backend calls, itself or through cudarc. cudarc looks each
/// name up at its first call and panics when the library lacks it, so a library without all of
/// them is not used ([`missing_entry_points`]). Each is in every driver since CUDA 11.2; the
/// stand-in driver (`fakecuda/`) exports these (and what the tests' own use of CUDA needs), and
/// its tests run the backend's paths, so a call to any other fails there first. (Two calls are
/// kept out of that way only by the order of `Live::open`: event tracking is off before the
/// stream is made, so cudarc never calls cuCtxSynchronize or cuStreamWaitEvent.)
pub const ENTRY_POINTS: [&str; 37] = [
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDeviceGetPCIBusId",
    "cuDeviceGetDefaultMemPool",
    "cuMemPoolTrimTo",
    "cuCtxCreate_v2",
    "cuCtxDestroy_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxPopCurrent_v2",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuMemGetInfo_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemsetD8Async",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuModuleLoadData",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventDestroy_v2",
];

/// The oldest driver xcd uses, as `cuDriverGetVersion` tells it: CUDA 12.0 (Linux driver 525).
pub const OLDEST_DRIVER: i32 = 12000;

/// `CU_COMPUTEMODE_PROHIBITED` and `CU_COMPUTEMODE_EXCLUSIVE_PROCESS`.
const PROHIBITED: i32 = 2;
const EXCLUSIVE_PROCESS: i32 = 3;

/// What the driver tells of one GPU before a context is made on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gpu {
    /// Its ordinal in the driver's order (`CUDA_VISIBLE_DEVICES` applied).
    pub(crate) ordinal: usize,
    pub(crate) name: String,
    /// `dddd:bb:dd.f`, where the driver tells.
    pub(crate) pci_bus: Option<String>,
    /// Compute capability, major and minor.
    pub(crate) capability: (u32, u32),
    /// Device memory, in bytes.
    pub(crate) total: u64,
    /// Whether it is in exclusive-process compute mode: one context at a time on it.
    pub(crate) exclusive: bool,
}

/// The GPUs this process may use, named apart ([`DeviceInfo::ids`]), or the notes that say why
/// there are none or why some are not served.
pub(crate) fn gpus() -> (Vec<(Gpu, String)>, Vec<String>) {
    let mut notes = Vec::new();
    // SAFETY: only tries to open the driver library by its usual names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        // The driver's library is nvcuda.dll on Windows, libcuda.so.1 elsewhere.
        let library = if cfg!(windows) { "nvcuda.dll" } else { "libcuda" };
        notes.push(format!("cuda: no CUDA driver ({library} not found)"));
        return (Vec::new(), notes);
    }
    let missing = missing_entry_points();
    if !missing.is_empty() {
        // A library that has cuDriverGetVersion says which driver it is: a newer driver that
        // dropped an old entry point is told apart from an old or foreign library.
        let version = (!missing.contains(&"cuDriverGetVersion")).then(driver_version).flatten();
        notes.push(missing_note(&missing, version));
        return (Vec::new(), notes);
    }
    let count = match CudaContext::device_count() {
        Ok(count) => count,
        Err(DriverError(CUresult::CUDA_ERROR_STUB_LIBRARY)) => {
            notes.push(stub_note());
            return (Vec::new(), notes);
        }
        Err(e) => {
            notes.push(format!("cuda: the driver reports no usable device ({e})"));
            return (Vec::new(), notes);
        }
    };
    if let Some(note) = driver_too_old() {
        notes.push(note);
        return (Vec::new(), notes);
    }
    let oldest = oldest_capability();
    let mut usable = Vec::new();
    for ordinal in 0..count.max(0) as usize {
        match about(ordinal) {
            Ok((gpu, PROHIBITED)) => notes.push(prohibited_note(&gpu)),
            Ok((gpu, _)) if gpu.capability < oldest => notes.push(too_old_note(&gpu, oldest)),
            Ok((gpu, _)) => usable.push(gpu),
            Err(e) => notes.push(format!("cuda: device {ordinal} cannot be asked about ({e})")),
        }
    }
    let naming: Vec<Naming<'_>> = usable
        .iter()
        .map(|g| Naming { backend: BackendKind::Cuda, name: &g.name, pci_bus: g.pci_bus.as_deref() })
        .collect();
    let ids = DeviceInfo::ids(&naming);
    (usable.into_iter().zip(ids).collect(), notes)
}

/// The entry points of [`ENTRY_POINTS`] that the driver library lacks.
fn missing_entry_points() -> Vec<&'static str> {
    // SAFETY: the library was found just before; looking a name up runs none of its code.
    let library = unsafe { cudarc::driver::sys::culib() };
    // SAFETY: as above: the symbol is only looked up, never called.
    ENTRY_POINTS.iter().copied().filter(|name| unsafe { library.get::<*const ()>(name.as_bytes()) }.is_err()).collect()
}

/// The note for a library that lacks entry points xcd calls, by the driver version it tells.
fn missing_note(missing: &[&str], version: Option<i32>) -> String {
    let listed = if missing.len() > 4 {
        format!("{} and {} more", missing[..4].join(", "), missing.len() - 4)
    } else {
        missing.join(", ")
    };
    match version {
        Some(version) if version >= OLDEST_DRIVER => format!(
            "cuda: skipped: the driver (CUDA {}) lacks {listed}, which this xcd calls: the driver dropped them, so this xcd is too old for it; use an xcd built for CUDA {} (its GPUs are served through Vulkan meanwhile)",
            version_words(version),
            version_words(version)
        ),
        _ => format!(
            "cuda: skipped: the driver library (libcuda) lacks {listed}, which xcd calls: it is not NVIDIA's driver, or older than CUDA {}; install NVIDIA's driver {} or newer (its GPUs are served through Vulkan meanwhile)",
            version_words(OLDEST_DRIVER),
            linux_driver(OLDEST_DRIVER)
        ),
    }
}

/// The CUDA version the driver supports, as `cuDriverGetVersion` tells it.
fn driver_version() -> Option<i32> {
    let mut version = 0;
    // SAFETY: the driver writes its version into `version`.
    let told = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    (told == CUresult::CUDA_SUCCESS).then_some(version)
}

/// `12020` as `12.2`.
pub(crate) fn version_words(version: i32) -> String {
    format!("{}.{}", version / 1000, version % 1000 / 10)
}

/// The first Linux driver branch of a CUDA version, as NVIDIA's release notes give it.
fn linux_driver(version: i32) -> &'static str {
    if version >= 12000 { "525" } else { "450" }
}

/// The note for a driver older than [`OLDEST_DRIVER`], if it is.
fn driver_too_old() -> Option<String> {
    let Some(version) = driver_version() else {
        return Some("cuda: skipped: the driver does not tell its version (cuDriverGetVersion fails)".into());
    };
    (version < OLDEST_DRIVER).then(|| {
        format!(
            "cuda: skipped: the driver supports CUDA {} and xcd needs CUDA {} (driver {}) or newer: update the NVIDIA driver (its GPUs are served through Vulkan meanwhile)",
            version_words(version),
            version_words(OLDEST_DRIVER),
            linux_driver(OLDEST_DRIVER)
        )
    })
}

fn prohibited_note(gpu: &Gpu) -> String {
    format!(
        "cuda: device {} ({}) is in the Prohibited compute mode, so no program may make a context on it: it is not served (as root, `nvidia-smi -i {} -c DEFAULT` allows it)",
        gpu.ordinal, gpu.name, gpu.ordinal
    )
}

/// Asks the driver about one GPU, without a context; with it, its compute mode.
fn about(ordinal: usize) -> Result<(Gpu, i32), DriverError> {
    let device = result::device::get(ordinal as i32)?;
    let name = result::device::get_name(device)?;
    // SAFETY: `device` came from the driver just above.
    let attribute = |a| unsafe { result::device::get_attribute(device, a) };
    let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let mode = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_MODE)?;
    // SAFETY: as above.
    let total = unsafe { result::device::total_mem(device) }? as u64;
    let mut bus = [0u8; 32];
    // SAFETY: the driver writes at most `bus.len()` bytes, NUL included.
    let told = unsafe { cudarc::driver::sys::cuDeviceGetPCIBusId(bus.as_mut_ptr().cast(), bus.len() as i32, device) };
    let pci_bus = (told == CUresult::CUDA_SUCCESS)
        .then(|| {
            std::ffi::CStr::from_bytes_until_nul(&bus)
                .ok()
                .and_then(|s| s.to_str().ok())
                .and_then(xcd_wire::pci_address)
        })
        .flatten();
    let capability = (major.max(0) as u32, minor.max(0) as u32);
    Ok((Gpu { ordinal, name, pci_bus, capability, total, exclusive: mode == EXCLUSIVE_PROCESS }, mode))
}

/// The compute capability of the `.target` a PTX text declares (`sm_60` → 6.0, `sm_90a` → 9.0).
pub fn ptx_target(ptx: &str) -> Option<(u32, u32)> {
    let line = ptx.lines().map(str::trim).find(|l| l.starts_with(".target"))?;
    let sm = line.trim_start_matches(".target").split([',', ' ', '\t']).find(|w| !w.is_empty())?;
    let digits: String = sm.strip_prefix("sm_")?.chars().take_while(char::is_ascii_digit).collect();
    let number: u32 = digits.parse().ok()?;
    Some((number / 10, number % 10))
}

/// The oldest GPU the PTX xcd-forms writes runs on.
fn oldest_capability() -> (u32, u32) {
    ptx_target(&format!(".target {}", xcd_forms::ptx::TARGET)).unwrap_or((6, 0))
}

/// Why a GPU cannot run a block's PTX, if it cannot: a form for a newer GPU than this one.
pub(crate) fn too_new(ptx: &str, capability: (u32, u32)) -> Option<String> {
    let target = ptx_target(ptx)?;
    (target > capability).then(|| {
        format!(
            "its PTX is for sm_{}{}, newer than this GPU (compute capability {}.{}): send the block's WGSL, from which xcd writes PTX this GPU runs, or PTX for sm_{}{} or older",
            target.0, target.1, capability.0, capability.1, capability.0, capability.1
        )
    })
}

fn too_old_note(gpu: &Gpu, oldest: (u32, u32)) -> String {
    format!(
        "cuda: device {} ({}) has compute capability {}.{}, and the PTX xcd writes needs {}.{} or newer: it is not served through CUDA (it is through Vulkan where its driver has one)",
        gpu.ordinal, gpu.name, gpu.capability.0, gpu.capability.1, oldest.0, oldest.1
    )
}

/// The note for a driver library that is the CUDA toolkit's stub: it links programs but runs
/// nothing. It is found before the driver's own `libcuda.so.1` when its folder is on
/// `LD_LIBRARY_PATH`, because `libcuda.so` is the first name tried.
fn stub_note() -> String {
    let stub = stub_path();
    let (found, folder) = match &stub {
        Some(path) => (
            format!(" ({})", path.display()),
            path.parent().map_or_else(|| "its folder".to_owned(), |p| p.display().to_string()),
        ),
        None => (String::new(), "the toolkit's stubs folder".to_owned()),
    };
    format!(
        "cuda: the libcuda.so found first{found} is the CUDA toolkit's stub, which runs nothing: take {folder} off LD_LIBRARY_PATH so that the driver's own libcuda.so.1 is loaded"
    )
}

/// The first `libcuda.so` on `LD_LIBRARY_PATH`, which the loader took.
fn stub_path() -> Option<PathBuf> {
    let path = std::env::var_os("LD_LIBRARY_PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("libcuda.so")).find(|p| p.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_targets_are_read_and_compared_with_the_card() {
        assert_eq!(ptx_target("//\n.version 6.0\n.target sm_60\n.address_size 64"), Some((6, 0)));
        assert_eq!(ptx_target(".target sm_90a, debug"), Some((9, 0)));
        assert_eq!(ptx_target(".target sm_86"), Some((8, 6)));
        assert_eq!(ptx_target(".version 6.0"), None);
        assert_eq!(oldest_capability(), (6, 0), "xcd-forms writes for Pascal and newer");
        assert_eq!(too_new(".target sm_60", (9, 0)), None);
        let why = too_new(".target sm_90", (8, 0)).expect("too new for an A100");
        assert!(why.contains("sm_90, newer than this GPU (compute capability 8.0)") && why.contains("sm_80"), "{why}");
        let gpu = Gpu {
            ordinal: 1,
            name: "Tesla M40".into(),
            pci_bus: None,
            capability: (5, 2),
            total: 12 << 30,
            exclusive: false,
        };
        let note = too_old_note(&gpu, (6, 0));
        assert!(note.contains("device 1 (Tesla M40) has compute capability 5.2"), "{note}");
    }

    #[test]
    fn driver_versions_are_said_as_nvidia_says_them() {
        assert_eq!(version_words(12020), "12.2");
        assert_eq!(version_words(11040), "11.4");
        assert_eq!(version_words(13000), "13.0");
        let newer = missing_note(&["cuCtxCreate_v2"], Some(14000));
        assert!(newer.contains("the driver (CUDA 14.0) lacks cuCtxCreate_v2, which this xcd calls"), "{newer}");
        let missing =
            missing_note(&["cuCtxCreate_v2", "cuInit", "cuMemAllocAsync", "cuLaunchKernel", "cuEventQuery"], None);
        assert!(missing.starts_with("cuda: skipped: the driver library (libcuda) lacks cuCtxCreate_v2, cuInit, cuMemAllocAsync, cuLaunchKernel and 1 more"), "{missing}");
        assert!(missing.contains("older than CUDA 12.0; install NVIDIA's driver 525 or newer"), "{missing}");
    }
}
