//! A wgpu device's buffers: each loaded block's per-item and read-back buffers, grown on demand
//! and kept across tiles to [`TILE_BUFFERS_KEPT`] bytes across blocks (growing one block's past
//! that drops the least recently run blocks'), and whole arrays' buffers, kept by content hash
//! ([`crate::whole`]). Makes and drops buffers only; running a tile is the parent module's.

use xcd_wire::{ArrayRole, BlockDesc, BlockId};

use super::WgpuDevice;
use crate::EngineError;

/// Bytes of per-item and read-back buffers a device keeps across blocks (on a device that computes
/// on the CPU, host memory); one block's own may be larger, with every other block's dropped.
pub const TILE_BUFFERS_KEPT: u64 = 512 << 20;

impl WgpuDevice {
    pub(super) fn buffer(&self, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: size.max(4).next_multiple_of(4),
            usage,
            mapped_at_creation: false,
        })
    }

    /// Grows a kernel's per-item and read-back buffers to hold `items`.
    pub(super) fn grow(&mut self, id: BlockId, desc: &BlockDesc, items: u32) -> Result<(), EngineError> {
        let capacity = items.checked_next_power_of_two().unwrap_or(items);
        let largest = desc.arrays.iter().map(|a| u64::from(a.elem_size)).max().unwrap_or(4) * u64::from(capacity);
        if largest > self.info.max_buffer_bytes {
            return Err(EngineError::TooLarge {
                device: self.info.id.clone(),
                items,
                bytes: u64::from(items) * largest / u64::from(capacity.max(1)),
                max: self.info.max_buffer_bytes,
            });
        }
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let per_item: Vec<Option<wgpu::Buffer>> = desc
            .arrays
            .iter()
            .map(|a| match a.role {
                ArrayRole::PerItem(_) => {
                    Some(self.buffer(&a.name, u64::from(a.elem_size) * u64::from(capacity), storage))
                }
                ArrayRole::Whole => None,
            })
            .collect();
        // The outputs, then the loop-cut word where the kernel has one.
        let readback_bytes: u64 =
            desc.tile_outputs().map(|i| u64::from(desc.arrays[i].elem_size) * u64::from(capacity)).sum::<u64>() + 4;
        let readback =
            self.buffer("readback", readback_bytes, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
        let held = per_item.iter().flatten().map(wgpu::Buffer::size).sum::<u64>() + readback.size();
        self.make_room_for_tiles(id, held);
        if let Some(kernel) = self.kernels.get_mut(&id) {
            kernel.per_item = per_item;
            kernel.readback = readback;
            kernel.capacity = capacity;
            kernel.held = held;
        }
        Ok(())
    }

    /// Drops the tile buffers of the least recently run blocks other than `id` until `id`'s
    /// `bytes` fit in what the device keeps ([`TILE_BUFFERS_KEPT`]) beside the rest (all of
    /// them, if need be).
    fn make_room_for_tiles(&mut self, id: BlockId, bytes: u64) {
        loop {
            let others: u64 = self.kernels.iter().filter(|(k, _)| **k != id).map(|(_, kernel)| kernel.held).sum();
            if others + bytes <= self.tile_buffers_kept || others == 0 {
                return;
            }
            let oldest = self
                .kernels
                .iter()
                .filter(|(k, kernel)| **k != id && kernel.held > 0)
                .min_by_key(|(_, kernel)| kernel.used)
                .map(|(k, _)| *k);
            let Some(oldest) = oldest else { return };
            let readback = self.buffer("readback", 4, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            if let Some(kernel) = self.kernels.get_mut(&oldest) {
                kernel.per_item = Vec::new();
                kernel.readback = readback;
                kernel.capacity = 0;
                kernel.held = 0;
            }
        }
    }

    /// The buffer holding a whole array, uploaded on first use; refused if the device cannot bind
    /// it.
    pub(super) fn whole_buffer(&mut self, array: &xcd_wire::WholeArray) -> Result<wgpu::Buffer, EngineError> {
        if let Some(buffer) = self.whole.get(&array.hash) {
            return Ok(buffer.clone());
        }
        let bytes = array.data.len() as u64;
        if bytes > self.info.max_buffer_bytes {
            let (device, max) = (self.info.id.clone(), self.info.max_buffer_bytes);
            return Err(EngineError::WholeTooLarge { device, bytes, max });
        }
        self.whole.make_room(bytes);
        let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
        let buffer = self.buffer("whole", bytes, usage);
        self.queue.write_buffer(&buffer, 0, &array.data);
        self.whole.insert(array.hash, buffer.clone(), bytes);
        Ok(buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::owner::Backend;
    use xcd_wire::{Access, ArraySpec, Forms, Tile};

    const PLUS_ONE: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn plus_one(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = x[i] + 1u;
}
"#;

    fn block(name: &str) -> (BlockId, BlockDesc) {
        let array = |name: &str, access| ArraySpec {
            name: name.into(),
            elem_size: 4,
            role: xcd_wire::ArrayRole::PerItem(access),
        };
        let desc = BlockDesc {
            name: name.into(),
            entry: "plus_one".into(),
            arrays: vec![array("x", Access::In), array("y", Access::Out)],
            params: Vec::new(),
            forms: Forms { wgsl: Some(PLUS_ONE.into()), ..Forms::default() },
        };
        (desc.id(), desc)
    }

    fn run(device: &mut WgpuDevice, (id, desc): &(BlockId, BlockDesc), count: u32) {
        let x: Vec<u8> = (0..count).flat_map(|i| i.to_le_bytes()).collect();
        let job = TileJob {
            block: *id,
            tile: Tile { start: 0, count },
            params: Vec::new(),
            inputs: vec![x.into()],
            whole: vec![],
        };
        let out = device.run(desc, &job, Duration::from_secs(60)).expect("runs");
        let want: Vec<u8> = (0..count).flat_map(|i| (i + 1).to_le_bytes()).collect();
        assert!(out.outputs[0] == want, "{} computes right", desc.name);
    }

    #[test]
    fn growing_one_blocks_buffers_drops_the_least_recently_run_blocks() {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let Some(adapter) = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN)).into_iter().next()
        else {
            assert!(std::env::var_os("CI").is_none(), "CI has llvmpipe");
            eprintln!("skipped: no Vulkan device");
            return;
        };
        let mut device =
            WgpuDevice::open(adapter, "vulkan:test".into(), BackendKind::Vulkan, FormPolicy::Remake, 1 << 20)
                .expect("opens");
        // Each block's buffers at 65,536 items: 256 KiB in, 256 KiB out, 256 KiB read back.
        device.tile_buffers_kept = 1 << 20;
        let (one, two, three) = (block("one"), block("two"), block("three"));
        for b in [&one, &two, &three] {
            device.load(b.0, &b.1).expect("loads");
        }
        run(&mut device, &one, 65_536);
        run(&mut device, &two, 1024);
        assert!(device.kernels[&one.0].held > 0 && device.kernels[&two.0].held > 0, "both fit");
        run(&mut device, &three, 65_536);
        assert_eq!(device.kernels[&one.0].held, 0, "the least recently run made room");
        assert!(device.kernels[&two.0].held > 0, "the more recent kept");
        let kept: u64 = device.kernels.values().map(|k| k.held).sum();
        assert!(kept <= device.tile_buffers_kept, "{kept} bytes kept");
        run(&mut device, &one, 65_536);
        assert!(device.kernels[&one.0].held > 0, "grown again when run again");
    }
}
