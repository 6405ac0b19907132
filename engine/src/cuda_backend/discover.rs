//! Finding CUDA devices: the driver library, each GPU's name, PCI address and compute capability
//! (asked without making a context), and which GPUs the PTX xcd-forms writes can run on. Owns the
//! notes that say why a GPU is not served; opening a device is the parent module's.

use std::path::PathBuf;

use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, DriverError, result};
use xcd_wire::device::Found as Naming;
use xcd_wire::{BackendKind, DeviceInfo};

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
    let oldest = oldest_capability();
    let mut usable = Vec::new();
    for ordinal in 0..count.max(0) as usize {
        match about(ordinal) {
            Ok(gpu) if gpu.capability < oldest => notes.push(too_old_note(&gpu, oldest)),
            Ok(gpu) => usable.push(gpu),
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

/// Asks the driver about one GPU, without a context.
fn about(ordinal: usize) -> Result<Gpu, DriverError> {
    let device = result::device::get(ordinal as i32)?;
    let name = result::device::get_name(device)?;
    // SAFETY: `device` came from the driver just above.
    let attribute = |a| unsafe { result::device::get_attribute(device, a) };
    let major = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
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
    Ok(Gpu { ordinal, name, pci_bus, capability: (major.max(0) as u32, minor.max(0) as u32), total })
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
        let gpu = Gpu { ordinal: 1, name: "Tesla M40".into(), pci_bus: None, capability: (5, 2), total: 12 << 30 };
        let note = too_old_note(&gpu, (6, 0));
        assert!(note.contains("device 1 (Tesla M40) has compute capability 5.2"), "{note}");
    }
}
