//! One tile on a wgpu device, in steps: its buffers made ready, its dispatches planned (one
//! uniform slot each, within the device's workgroup limit), the commands encoded and submitted,
//! and the results read back within the tile deadline, with the detectors' word checked. Owns
//! running a tile; loading blocks and growing buffers are the parent's and `buffers`'.

use std::sync::mpsc;
use std::time::Duration;

use xcd_wire::{BlockDesc, TILE_HEADER_WORDS, WORKGROUP_SIZE};

use super::{Kernel, WgpuDevice};
use crate::{EngineError, TileJob, TileOutput};

/// How a tile is split into dispatches: one uniform slot of header and parameters each.
pub(super) struct Plan {
    /// Every dispatch's slot, back to back.
    pub(super) uniform: Vec<u8>,
    dispatches: u64,
    /// Items per dispatch (the last may have fewer).
    per_dispatch: u64,
}

/// A submitted tile: where each output lies in the read-back buffer, its bytes in all, and the
/// submission to wait for.
pub(super) struct Submitted {
    slices: Vec<(u64, u64)>,
    total: u64,
    submission: wgpu::SubmissionIndex,
}

impl WgpuDevice {
    /// The launch error of block `desc` on this device.
    pub(super) fn failed(&self, desc: &BlockDesc, reason: String) -> EngineError {
        EngineError::Launch { device: self.info.id.clone(), block: desc.name.clone(), reason }
    }

    /// Grows the block's buffers to the tile where they are smaller, and makes sure its whole
    /// arrays are on the device; those arrays' buffers and sizes, in binding order.
    pub(super) fn ready(&mut self, desc: &BlockDesc, job: &TileJob) -> Result<Vec<(wgpu::Buffer, u64)>, EngineError> {
        let id = job.block;
        self.runs += 1;
        let runs = self.runs;
        let needs_growth = self
            .kernels
            .get_mut(&id)
            .map(|k| {
                k.used = runs;
                k.capacity < job.tile.count
            })
            .ok_or(EngineError::NotLoaded(id))?;
        if needs_growth {
            self.grow(id, desc, job.tile.count)?;
        }
        job.whole.iter().map(|w| Ok((self.whole_buffer(w)?, w.data.len() as u64))).collect()
    }

    /// Splits the tile into dispatches the device's workgroup limit allows, each with its slot.
    pub(super) fn plan(&self, desc: &BlockDesc, job: &TileJob) -> Plan {
        let per_dispatch = u64::from(self.max_workgroups.max(1)) * u64::from(WORKGROUP_SIZE);
        let dispatches = u64::from(job.tile.count).div_ceil(per_dispatch);
        let slot = self.slot_bytes;
        let mut uniform = vec![0u8; (dispatches * slot) as usize];
        for d in 0..dispatches {
            let first = (d * per_dispatch) as u32;
            let words: Vec<u32> = job.tile.header(first).into_iter().chain(job.params.iter().copied()).collect();
            debug_assert_eq!(words.len(), TILE_HEADER_WORDS + desc.params.len());
            let at = (d * slot) as usize;
            for (k, word) in words.iter().enumerate() {
                uniform[at + 4 * k..at + 4 * k + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
        Plan { uniform, dispatches, per_dispatch }
    }

    /// Grows the block's uniform buffer to `bytes` where it is smaller.
    pub(super) fn ensure_uniform(&mut self, id: xcd_wire::BlockId, bytes: u64) -> Result<(), EngineError> {
        let kernel = self.kernels.get_mut(&id).ok_or(EngineError::NotLoaded(id))?;
        if kernel.uniform.size() < bytes {
            kernel.uniform = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("uniform"),
                size: bytes,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
        }
        Ok(())
    }

    /// Writes the tile's inputs and slots, encodes its dispatches and the copies of its outputs
    /// into the read-back buffer, and submits them; `None` when the tile lacks a whole array.
    pub(super) fn submit(
        &self,
        kernel: &Kernel,
        desc: &BlockDesc,
        job: &TileJob,
        wholes: &[(wgpu::Buffer, u64)],
        plan: &Plan,
    ) -> Option<Submitted> {
        let (queue, count) = (&self.queue, job.tile.count);
        queue.write_buffer(&kernel.uniform, 0, &plan.uniform);
        if let Some(cut) = &kernel.cut {
            queue.write_buffer(cut, 0, &[0u8; 8]);
        }
        for (index, data) in desc.tile_inputs().zip(&job.inputs) {
            if let Some(buffer) = &kernel.per_item[index] {
                queue.write_buffer(buffer, 0, data);
            }
        }
        let bind_group = self.bind_group(kernel, desc, count, wholes)?;
        let mut encoder =
            self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(&desc.name) });
        {
            let mut pass = encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(&desc.name), timestamp_writes: None });
            pass.set_pipeline(&kernel.pipeline);
            for d in 0..plan.dispatches {
                let items = (u64::from(count) - d * plan.per_dispatch).min(plan.per_dispatch);
                pass.set_bind_group(0, &bind_group, &[(d * self.slot_bytes) as u32]);
                pass.dispatch_workgroups(items.div_ceil(u64::from(WORKGROUP_SIZE)) as u32, 1, 1);
            }
        }
        let mut total = 0u64;
        let mut slices = Vec::new();
        for index in desc.tile_outputs() {
            let bytes = u64::from(desc.arrays[index].elem_size) * u64::from(count);
            if let Some(buffer) = &kernel.per_item[index] {
                encoder.copy_buffer_to_buffer(buffer, 0, &kernel.readback, total, bytes);
            }
            slices.push((total, bytes));
            total += bytes;
        }
        if let Some(cut) = &kernel.cut {
            encoder.copy_buffer_to_buffer(cut, 0, &kernel.readback, total, 4);
            total += 4;
        }
        let submission = queue.submit([encoder.finish()]);
        Some(Submitted { slices, total, submission })
    }

    /// The tile's bindings: its slot, each array (per-item arrays at the tile's size, whole
    /// arrays at theirs), then the detectors' word where the kernel has one; `None` when the
    /// tile lacks a whole array.
    fn bind_group(
        &self,
        kernel: &Kernel,
        desc: &BlockDesc,
        count: u32,
        wholes: &[(wgpu::Buffer, u64)],
    ) -> Option<wgpu::BindGroup> {
        let binding = |buffer, size| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding { buffer, offset: 0, size: wgpu::BufferSize::new(size) })
        };
        let mut entries =
            vec![wgpu::BindGroupEntry { binding: 0, resource: binding(&kernel.uniform, self.slot_bytes) }];
        let mut next_whole = wholes.iter();
        for (index, array) in desc.arrays.iter().enumerate() {
            let (buffer, size) = match &kernel.per_item[index] {
                Some(buffer) => (buffer, u64::from(array.elem_size) * u64::from(count)),
                None => next_whole.next().map(|(buffer, size)| (buffer, *size))?,
            };
            entries.push(wgpu::BindGroupEntry { binding: index as u32 + 1, resource: binding(buffer, size) });
        }
        if let Some(cut) = &kernel.cut {
            entries.push(wgpu::BindGroupEntry {
                binding: desc.arrays.len() as u32 + 1,
                resource: cut.as_entire_binding(),
            });
        }
        Some(self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some(&desc.name),
            layout: &kernel.layout,
            entries: &entries,
        }))
    }

    /// Waits for the submitted tile at most `deadline`, reads its outputs back, and refuses a
    /// tile the detectors say this device did not compute exactly.
    pub(super) fn read_back(
        &self,
        kernel: &Kernel,
        desc: &BlockDesc,
        submitted: Submitted,
        deadline: Duration,
    ) -> Result<TileOutput, EngineError> {
        let Submitted { slices, total, submission } = submitted;
        let (tx, rx) = mpsc::channel();
        kernel.readback.map_async(wgpu::MapMode::Read, 0..total, move |result| {
            let _ = tx.send(result);
        });
        let wait = wgpu::PollType::Wait { submission_index: Some(submission), timeout: Some(deadline) };
        match self.device.poll(wait) {
            Ok(_) => {}
            Err(wgpu::PollError::Timeout) => {
                let seconds = deadline.as_secs().max(1);
                return Err(EngineError::Deadline { device: self.info.id.clone(), block: desc.name.clone(), seconds });
            }
            Err(e) => return Err(self.failed(desc, e.to_string())),
        }
        match rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.failed(desc, e.to_string())),
            Err(_) => return Err(self.failed(desc, "the read-back never completed".into())),
        }
        let (outputs, cut) = {
            let view = kernel.readback.get_mapped_range(0..total).map_err(|e| self.failed(desc, e.to_string()))?;
            let outputs = slices.iter().map(|&(at, bytes)| view[at as usize..(at + bytes) as usize].to_vec()).collect();
            // Out of mapped memory into the result: the one copy the daemon makes of a result.
            xcd_wire::copies::count(slices.iter().map(|&(_, bytes)| bytes as usize).sum());
            let word = view[(total - 4) as usize..].try_into().map(u32::from_le_bytes).unwrap_or(0);
            (outputs, if kernel.cut.is_some() { word } else { 0 })
        };
        kernel.readback.unmap();
        if cut != 0 {
            let reason = if cut == xcd_forms::CUT_LOOP {
                "it cut a loop short (the software Vulkan device ends loops after about 65,535 iterations per 8 items)"
            } else {
                "it met a subnormal float, which this device flushes to zero"
            };
            let (device, block) = (self.info.id.clone(), desc.name.clone());
            return Err(EngineError::Inexact { device, block, reason: reason.into() });
        }
        Ok(TileOutput { outputs })
    }
}
