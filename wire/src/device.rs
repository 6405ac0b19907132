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
    /// `<backend>:<adapter name>`, e.g. `vulkan:llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub id: String,
    /// The API it is driven through.
    pub backend: BackendKind,
    /// The adapter's own name.
    pub name: String,
    /// True for a device that computes on the CPU (llvmpipe, lavapipe, SwiftShader).
    pub cpu: bool,
    /// Device memory in bytes, where the driver tells.
    pub memory_total: Option<u64>,
    /// Free device memory in bytes, where the driver tells (VK_EXT_memory_budget, CUDA).
    pub memory_free: Option<u64>,
    /// Largest buffer the device accepts, in bytes: bounds a tile's arrays.
    pub max_buffer_bytes: u64,
    /// Why the device is out of service (a kernel ran past the tile deadline, a driver fault),
    /// while it is; absent for a device that serves. Its owner tries to bring it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
}

impl DeviceInfo {
    /// The id from a backend and an adapter name.
    pub fn make_id(backend: BackendKind, name: &str) -> String {
        format!("{backend}:{name}")
    }
}
