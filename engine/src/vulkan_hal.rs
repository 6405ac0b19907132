//! What wgpu does not ask a device for, read through its Vulkan HAL with ash: free memory
//! (`VK_EXT_memory_budget`) and float controls (whether a kernel may ask the driver to keep
//! signed zeros, infinities, NaNs and subnormals). Reads properties only; creates nothing.
#![allow(unsafe_code)]

/// What a Vulkan device keeps of f32 when a shader declares it (Vulkan 1.2 float controls).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FloatControls {
    /// `shaderSignedZeroInfNanPreserveFloat32`.
    pub(crate) signed_zero_inf_nan: bool,
    /// `shaderDenormPreserveFloat32`.
    pub(crate) denorms: bool,
}

/// The float controls of a Vulkan device; nothing elsewhere.
pub(crate) fn float_controls(adapter: &wgpu::Adapter) -> FloatControls {
    #[cfg(any(target_os = "linux", target_os = "windows", target_os = "android"))]
    {
        vulkan_float_controls(adapter)
    }
    #[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "android")))]
    {
        let _ = adapter;
        FloatControls::default()
    }
}

#[cfg(any(target_os = "linux", target_os = "windows", target_os = "android"))]
fn vulkan_float_controls(adapter: &wgpu::Adapter) -> FloatControls {
    use ash::vk;
    // SAFETY: only reads properties of the physical device, as `vulkan_memory` does.
    let Some(hal) = (unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }) else {
        return FloatControls::default();
    };
    let instance = hal.shared_instance().raw_instance();
    let physical = hal.raw_physical_device();
    let mut controls = vk::PhysicalDeviceFloatControlsProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut controls);
    // SAFETY: `physical` was enumerated from `instance`; float controls are core in Vulkan 1.2,
    // and a driver that does not know the chained struct leaves it as it was (false).
    unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
    FloatControls {
        signed_zero_inf_nan: controls.shader_signed_zero_inf_nan_preserve_float32 == vk::TRUE,
        denorms: controls.shader_denorm_preserve_float32 == vk::TRUE,
    }
}

/// Device-local memory (total, free) where the driver tells: Vulkan heaps, and the budget where
/// `VK_EXT_memory_budget` is present. wgpu itself has no such query.
pub(crate) fn memory(adapter: &wgpu::Adapter) -> (Option<u64>, Option<u64>) {
    #[cfg(any(target_os = "linux", target_os = "windows", target_os = "android"))]
    {
        vulkan_memory(adapter)
    }
    #[cfg(not(any(target_os = "linux", target_os = "windows", target_os = "android")))]
    {
        let _ = adapter;
        (None, None)
    }
}

#[cfg(any(target_os = "linux", target_os = "windows", target_os = "android"))]
fn vulkan_memory(adapter: &wgpu::Adapter) -> (Option<u64>, Option<u64>) {
    use ash::vk;
    // SAFETY: only reads properties of the physical device; nothing is created or destroyed, and
    // the guard keeps the adapter alive for the duration.
    let Some(hal) = (unsafe { adapter.as_hal::<wgpu::hal::api::Vulkan>() }) else {
        return (None, None);
    };
    let instance = hal.shared_instance().raw_instance();
    let physical = hal.raw_physical_device();
    // SAFETY: `physical` was enumerated from `instance`, which outlives this call.
    let props = unsafe { instance.get_physical_device_memory_properties(physical) };
    let heaps = &props.memory_heaps[..(props.memory_heap_count as usize).min(vk::MAX_MEMORY_HEAPS)];
    let local: Vec<usize> =
        (0..heaps.len()).filter(|&i| heaps[i].flags.contains(vk::MemoryHeapFlags::DEVICE_LOCAL)).collect();
    let total: u64 = local.iter().map(|&i| heaps[i].size).sum();
    let total = (total > 0).then_some(total);
    if !hal.physical_device_capabilities().supports_extension(ash::ext::memory_budget::NAME) {
        return (total, None);
    }
    let mut budget = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
    let mut props2 = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget);
    // SAFETY: as above; the extension is present, so the chained struct is understood.
    unsafe { instance.get_physical_device_memory_properties2(physical, &mut props2) };
    let free: u64 = local.iter().map(|&i| budget.heap_budget[i].saturating_sub(budget.heap_usage[i])).sum();
    (total, Some(free))
}
