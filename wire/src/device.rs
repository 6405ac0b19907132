//! What a device is: the inventory a daemon serves and `xcrun devices` lists.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The GPU API a device is driven through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// NVIDIA CUDA driver API (PTX form).
    Cuda,
    /// Vulkan through wgpu (SPIR-V form), llvmpipe included.
    Vulkan,
    /// Metal through wgpu (MSL form).
    Metal,
    /// Direct3D 12 through wgpu (WGSL form).
    Dx12,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Vulkan => "vulkan",
            BackendKind::Metal => "metal",
            BackendKind::Dx12 => "dx12",
        })
    }
}

/// One device as listed in an inventory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// `<backend>:<adapter name>`, then ` @<PCI address>` where the driver tells one, e.g.
    /// `vulkan:llvmpipe (LLVM 15.0.6, 256 bits)` or `cuda:NVIDIA H200 @0000:3b:00.0`: unique on
    /// its machine and the same after a restart ([`DeviceInfo::ids`]).
    pub id: String,
    /// The API it is driven through.
    pub backend: BackendKind,
    /// The adapter's own name.
    pub name: String,
    /// True for a device that computes on the CPU (llvmpipe, lavapipe, SwiftShader).
    pub cpu: bool,
    /// Device memory in bytes, where the driver tells.
    pub memory_total: Option<u64>,
    /// Device memory free for work in bytes, where the driver tells (VK_EXT_memory_budget,
    /// CUDA): what is free, and what the device keeps between tiles (whole arrays, tile buffers)
    /// that it would let go for work; on CUDA, at most the device's budget.
    pub memory_free: Option<u64>,
    /// Largest buffer the device accepts, in bytes: bounds a tile's arrays.
    pub max_buffer_bytes: u64,
    /// Why the device is out of service (a kernel ran past the tile deadline, a driver fault),
    /// while it is; absent for a device that serves. Its owner tries to bring it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

/// What discovery knows of one device, to name it ([`DeviceInfo::ids`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Naming<'a> {
    /// The API it is driven through.
    pub backend: BackendKind,
    /// The adapter's own name.
    pub name: &'a str,
    /// Its PCI address as the driver gives it (`0000:3B:00.0`, `00000000:3b:00.0`), if any.
    pub pci_bus: Option<&'a str>,
}

impl DeviceInfo {
    /// The id from a backend and an adapter name alone (for a device known to be the only one
    /// of its name, such as a simulated one).
    pub fn make_id(backend: BackendKind, name: &str) -> String {
        format!("{backend}:{name}")
    }

    /// The ids of devices found together, in the same order: `<backend>:<name>`, then
    /// ` @<PCI address>` where the driver tells one, so that the eight identical GPUs of a
    /// server are told apart and each keeps its id across restarts (its slot does not move).
    /// Devices that would still share an id (no PCI address told) get ` #1`, ` #2`, … in the
    /// order found.
    pub fn ids(found: &[Naming<'_>]) -> Vec<String> {
        let base: Vec<String> = found
            .iter()
            .map(|f| match f.pci_bus.and_then(pci_address) {
                Some(bus) => format!("{} @{bus}", Self::make_id(f.backend, f.name)),
                None => Self::make_id(f.backend, f.name),
            })
            .collect();
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        base.iter()
            .map(|id| {
                if base.iter().filter(|other| *other == id).count() < 2 {
                    return id.clone();
                }
                let n = seen.entry(id.as_str()).or_insert(0);
                *n += 1;
                format!("{id} #{n}")
            })
            .collect()
    }
}

/// A PCI address in one spelling, `dddd:bb:dd.f` in lower-case hex, whichever way a driver
/// wrote it (CUDA: `0000:3B:00.0` or `00000000:3B:00.0`; Vulkan through wgpu: `0000:3b:00.0`);
/// `None` for anything else (an empty string, a device with no PCI address).
pub fn pci_address(text: &str) -> Option<String> {
    let (domain, rest) = text.trim().split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    let hex = |s: &str| u32::from_str_radix(s, 16).ok();
    let (domain, bus, device, function) = (hex(domain)?, hex(bus)?, hex(device)?, hex(function)?);
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found<'a>(backend: BackendKind, name: &'a str, pci_bus: Option<&'a str>) -> Naming<'a> {
        Naming { backend, name, pci_bus }
    }

    #[test]
    fn identical_gpus_are_named_apart_by_their_pci_address() {
        let buses = ["0000:1B:00.0", "0000:43:00.0", "00000000:52:00.0", "0000:61:00.0"];
        let node: Vec<Naming<'_>> =
            buses.iter().map(|bus| found(BackendKind::Cuda, "NVIDIA H200", Some(bus))).collect();
        let ids = DeviceInfo::ids(&node);
        assert_eq!(
            ids,
            [
                "cuda:NVIDIA H200 @0000:1b:00.0",
                "cuda:NVIDIA H200 @0000:43:00.0",
                "cuda:NVIDIA H200 @0000:52:00.0",
                "cuda:NVIDIA H200 @0000:61:00.0"
            ]
        );
        // A restart that finds them in another order, one of them gone, names the rest the same.
        let again = DeviceInfo::ids(&[node[3], node[0], node[2]]);
        assert_eq!(again, [ids[3].clone(), ids[0].clone(), ids[2].clone()]);
    }

    #[test]
    fn a_device_without_a_pci_address_keeps_its_plain_id_unless_its_name_repeats() {
        let llvmpipe = "llvmpipe (LLVM 15.0.6, 256 bits)";
        assert_eq!(
            DeviceInfo::ids(&[found(BackendKind::Vulkan, llvmpipe, Some(""))]),
            ["vulkan:llvmpipe (LLVM 15.0.6, 256 bits)"]
        );
        let ids = DeviceInfo::ids(&[
            found(BackendKind::Metal, "Apple M2", None),
            found(BackendKind::Vulkan, "Apple M2", None),
            found(BackendKind::Metal, "Apple M2", None),
        ]);
        assert_eq!(ids, ["metal:Apple M2 #1", "vulkan:Apple M2", "metal:Apple M2 #2"]);
    }

    #[test]
    fn pci_addresses_are_read_in_every_spelling_and_nothing_else() {
        assert_eq!(pci_address("0000:3B:00.0").as_deref(), Some("0000:3b:00.0"));
        assert_eq!(pci_address("00000000:3b:00.0").as_deref(), Some("0000:3b:00.0"));
        assert_eq!(pci_address("0001:c1:1f.7").as_deref(), Some("0001:c1:1f.7"));
        for bad in ["", "3b:00.0", "0000:3b:00", "zz:3b:00.0", "0000:3b:00.0.1"] {
            assert_eq!(pci_address(bad), None, "{bad:?}");
        }
    }
}
