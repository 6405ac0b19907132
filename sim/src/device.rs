//! The interpreter as an engine device: it takes a block as the CUDA backend does (the PTX
//! that `cuda_backend::ptx_form` gives, launched with `cuda_backend::ptx_args` in blocks of
//! `THREADS`), so the conformance suite checks the CUDA form through the engine's own path.

use std::collections::HashMap;
use std::time::Duration;

use xcd_engine::cuda_backend::{PtxArg, THREADS, ptx_args, ptx_form};
use xcd_engine::{Backend, EngineError, TileJob, TileOutput};
use xcd_wire::FormPolicy;
use xcd_wire::{ArrayRole, BackendKind, BlockDesc, BlockId, DeviceInfo};

use crate::{Arg, Program};

/// Instructions one thread may run before the tile fails (a kernel that never ends).
const BUDGET: u64 = 2_000_000_000;

/// A CUDA-like device that interprets PTX on the CPU, for tests.
pub struct SimDevice {
    info: DeviceInfo,
    kernels: HashMap<BlockId, Program>,
}

impl Default for SimDevice {
    fn default() -> Self {
        let name = "xcd-ptxsim".to_owned();
        SimDevice {
            info: DeviceInfo {
                id: DeviceInfo::make_id(BackendKind::Cuda, &name),
                backend: BackendKind::Cuda,
                name,
                cpu: true,
                memory_total: None,
                memory_free: None,
                max_buffer_bytes: 1 << 30,
                lost: None,
            },
            kernels: HashMap::new(),
        }
    }
}

impl SimDevice {
    /// A fresh device with nothing loaded.
    pub fn new() -> Self {
        SimDevice::default()
    }
}

impl Backend for SimDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn memory_free(&mut self) -> Option<u64> {
        None
    }

    fn load(&mut self, id: BlockId, desc: &BlockDesc) -> Result<(), EngineError> {
        let ptx = ptx_form(&self.info.id, desc, FormPolicy::Remake)?;
        let program = crate::parse(&ptx).map_err(|e| EngineError::Load {
            device: self.info.id.clone(),
            block: desc.name.clone(),
            reason: format!("the interpreter cannot read the PTX: {e}"),
        })?;
        self.kernels.insert(id, program);
        Ok(())
    }

    fn run(&mut self, desc: &BlockDesc, job: &TileJob, _deadline: Duration) -> Result<TileOutput, EngineError> {
        let program = self.kernels.get(&job.block).ok_or(EngineError::NotLoaded(job.block))?;
        let count = job.tile.count;
        let mut inputs = job.inputs.iter();
        let mut wholes = job.whole.iter();
        let mut buffers = Vec::new();
        for array in &desc.arrays {
            let bytes = array.elem_size as usize * count as usize;
            buffers.push(match array.role {
                ArrayRole::PerItem(_) if array.role.reads_per_item() => {
                    inputs.next().map(|d| d.to_vec()).unwrap_or_default()
                }
                // A device's fresh output buffer holds whatever was there: not zeros.
                ArrayRole::PerItem(_) => vec![0xA5; bytes],
                ArrayRole::Whole => wholes.next().map(|w| w.data.to_vec()).unwrap_or_default(),
            });
        }
        let mut args = Vec::new();
        for arg in ptx_args(desc, job) {
            match arg {
                PtxArg::Word(w) => args.push(Arg::Word(w)),
                PtxArg::Array { index, len } => {
                    args.push(Arg::Buffer(index));
                    args.push(Arg::Word(len));
                }
            }
        }
        program.run(count.div_ceil(THREADS), THREADS, &args, &mut buffers, BUDGET).map_err(|e| {
            EngineError::Launch { device: self.info.id.clone(), block: desc.name.clone(), reason: e.to_string() }
        })?;
        let outputs = desc.tile_outputs().map(|i| std::mem::take(&mut buffers[i])).collect();
        Ok(TileOutput { outputs })
    }
}
