//! One tile on a CUDA device: its buffers from the device's budget, the inputs copied in, the
//! launch with the ABI's arguments, a wait bounded by the tile deadline, the outputs copied
//! back. Owns the launch arguments ([`ptx_args`]); loading and recovery are the parent's.

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig, PushKernelArg};
use xcd_wire::{ArrayHash, ArrayRole, BlockDesc};

use super::outcome::{out_of_memory, run_error};
use super::{Live, Setup};
use crate::memory::Short;
use crate::{EngineError, TileJob, TileOutput};

/// Threads per CUDA block; any size works, the kernels index with blockDim.
pub const THREADS: u32 = 256;

/// One argument of a PTX kernel's launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtxArg {
    /// A 32-bit word by value: a header word or a parameter.
    Word(u32),
    /// Array `index`'s device pointer, then its length in elements as a word.
    Array {
        /// The array's position in the block's binding order.
        index: usize,
        /// Its length in elements: the tile's item count, or a whole array's own.
        len: u32,
    },
}

/// The arguments of one tile's launch, in order (docs/kernels.md): the tile header with
/// `first` 0, the parameters, then each array's pointer and length.
pub fn ptx_args(desc: &BlockDesc, job: &TileJob) -> Vec<PtxArg> {
    let mut args: Vec<PtxArg> =
        job.tile.header(0).into_iter().chain(job.params.iter().copied()).map(PtxArg::Word).collect();
    let mut wholes = job.whole.iter();
    for (index, array) in desc.arrays.iter().enumerate() {
        let len = match array.role {
            ArrayRole::PerItem(_) => job.tile.count,
            ArrayRole::Whole => wholes.next().map_or(0, |w| (w.data.len() / array.elem_size as usize) as u32),
        };
        args.push(PtxArg::Array { index, len });
    }
    args
}

impl Live {
    /// Runs one tile of a loaded block: buffers, inputs, launch, a bounded wait, outputs.
    pub(super) fn run(
        &mut self,
        setup: &Setup,
        desc: &BlockDesc,
        job: &TileJob,
        deadline: Duration,
    ) -> Result<TileOutput, EngineError> {
        // A checked job is not looked up by the owner: a block not loaded here is refused before
        // any buffer is made for it.
        if !self.kernels.contains_key(&job.block) {
            return Err(EngineError::NotLoaded(job.block));
        }
        self.check_size(setup, desc, job)?;
        self.upload(setup, desc, job)?;
        self.launch(setup, desc, job)?;
        self.wait(setup, desc, job, deadline)?;
        self.read_back(setup, desc, job)
    }

    /// Refuses a tile one of whose per-item buffers would pass the device's budget.
    fn check_size(&self, setup: &Setup, desc: &BlockDesc, job: &TileJob) -> Result<(), EngineError> {
        let count = u64::from(job.tile.count);
        let largest = desc.arrays.iter().filter(|a| a.role != ArrayRole::Whole).map(|a| u64::from(a.elem_size)).max();
        let max = self.memory.budget();
        match largest.map(|size| size * count) {
            Some(bytes) if bytes > max => {
                Err(EngineError::TooLarge { device: setup.id.clone(), items: job.tile.count, bytes, max })
            }
            _ => Ok(()),
        }
    }

    /// What a driver error while running the tile means for the caller ([`run_error`]).
    fn error(&self, setup: &Setup, desc: &BlockDesc, job: &TileJob, e: DriverError) -> EngineError {
        let per_item: u64 = desc
            .arrays
            .iter()
            .filter(|a| a.role != ArrayRole::Whole)
            .map(|a| u64::from(a.elem_size) * u64::from(job.tile.count))
            .sum();
        let needed = per_item + job.whole.iter().map(|w| w.data.len() as u64).sum::<u64>();
        run_error(&setup.id, &desc.name, e, needed, || self.free_for_work())
    }

    /// What a shortage of memory means for the caller, in bytes.
    fn short(&self, setup: &Setup, desc: &BlockDesc, job: &TileJob, short: Short<DriverError>) -> EngineError {
        let device = setup.id.clone();
        match short {
            Short::Budget { needed, room } => EngineError::OutOfMemory { device, needed, free: room },
            Short::Driver { needed } => EngineError::OutOfMemory { device, needed, free: self.free_for_work() },
            Short::Failed(e) => self.error(setup, desc, job, e),
        }
    }

    /// Makes sure the tile's whole arrays and per-item buffers are on the device, and copies
    /// the tile's inputs in.
    fn upload(&mut self, setup: &Setup, desc: &BlockDesc, job: &TileJob) -> Result<(), EngineError> {
        let stream = self.stream.clone();
        let keep: Vec<ArrayHash> = job.whole.iter().map(|w| w.hash).collect();
        for array in &job.whole {
            let bytes = array.data.len() as u64;
            let mut make = |_| stream.clone_htod(&array.data[..]);
            let kept = self.memory.whole(job.block, array.hash, bytes, &keep, &mut make, out_of_memory);
            kept.map_err(|short| self.short(setup, desc, job, short))?;
        }
        let sizes: Vec<Option<u32>> = desc
            .arrays
            .iter()
            .map(|a| match a.role {
                ArrayRole::PerItem(_) => Some(a.elem_size),
                ArrayRole::Whole => None,
            })
            .collect();
        let mut make = |bytes: u64| stream.alloc_zeros::<u8>(bytes as usize);
        let buffers = match self.memory.tile_buffers(job.block, &sizes, job.tile.count, &keep, &mut make, out_of_memory)
        {
            Ok(buffers) => buffers,
            Err(short) => return Err(self.short(setup, desc, job, short)),
        };
        let mut copied = Ok(());
        for (index, data) in desc.tile_inputs().zip(&job.inputs) {
            if let Some(buffer) = buffers.get_mut(index).and_then(Option::as_mut) {
                copied = stream.memcpy_htod(&data[..], &mut buffer.slice_mut(0..data.len()));
                if copied.is_err() {
                    break;
                }
            }
        }
        copied.map_err(|e| self.error(setup, desc, job, e))
    }

    /// Launches the tile's kernel on the device's stream.
    fn launch(&self, setup: &Setup, desc: &BlockDesc, job: &TileJob) -> Result<(), EngineError> {
        let function = self.kernels.get(&job.block).ok_or(EngineError::NotLoaded(job.block))?;
        let hashes: Vec<ArrayHash> = job.whole.iter().map(|w| w.hash).collect();
        let (tiles, wholes) = self.memory.bound(&job.block, &hashes);
        let unbound = || EngineError::BadJob("a buffer of the tile is not on the device".into());
        let tiles = tiles.ok_or_else(unbound)?;
        let args = ptx_args(desc, job);
        // The launch builder borrows every argument until the launch.
        let words: Vec<u32> = args.iter().map(|a| if let PtxArg::Word(w) = a { *w } else { 0 }).collect();
        let lens: Vec<u32> = args.iter().map(|a| if let PtxArg::Array { len, .. } = a { *len } else { 0 }).collect();
        let mut wholes = wholes.into_iter();
        let mut launch = self.stream.launch_builder(function);
        for (k, arg) in args.iter().enumerate() {
            match *arg {
                PtxArg::Word(_) => {
                    launch.arg(&words[k]);
                }
                PtxArg::Array { index, .. } => {
                    let buffer: &CudaSlice<u8> = match tiles.get(index).and_then(Option::as_ref) {
                        Some(buffer) => buffer,
                        None => wholes.next().flatten().ok_or_else(unbound)?,
                    };
                    launch.arg(buffer);
                    launch.arg(&lens[k]);
                }
            }
        }
        let config = LaunchConfig {
            grid_dim: (job.tile.count.div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments follow the ABI the PTX forms are written to (header words,
        // parameters, then each array's pointer and length), every per-item buffer holds at
        // least `count` elements, and the forms xcd-forms writes check every access against
        // those lengths.
        unsafe { launch.launch(config) }.map(drop).map_err(|e| self.error(setup, desc, job, e))
    }

    /// Waits for the tile's kernel, at most `deadline`: a copy back would wait forever.
    fn wait(&self, setup: &Setup, desc: &BlockDesc, job: &TileJob, deadline: Duration) -> Result<(), EngineError> {
        let err = |e| self.error(setup, desc, job, e);
        let done = self.stream.record_event(None).map_err(err)?;
        let started = Instant::now();
        while !done.try_is_complete().map_err(err)? {
            let waited = started.elapsed();
            if waited > deadline {
                let seconds = deadline.as_secs().max(1);
                return Err(EngineError::Deadline { device: setup.id.clone(), block: desc.name.clone(), seconds });
            }
            // Yield for the first milliseconds (most tiles end then), then sleep in short steps.
            if waited < Duration::from_millis(2) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        Ok(())
    }

    /// Copies the tile's outputs back.
    fn read_back(&self, setup: &Setup, desc: &BlockDesc, job: &TileJob) -> Result<TileOutput, EngineError> {
        let err = |e| self.error(setup, desc, job, e);
        let (tiles, _) = self.memory.bound(&job.block, &[]);
        let tiles = tiles.ok_or_else(|| EngineError::BadJob("the tile's buffers are not on the device".into()))?;
        let stream = &self.stream;
        let mut outputs = Vec::new();
        for index in desc.tile_outputs() {
            let bytes = desc.arrays[index].elem_size as usize * job.tile.count as usize;
            let mut out = vec![0u8; bytes];
            if let Some(buffer) = tiles.get(index).and_then(Option::as_ref) {
                stream.memcpy_dtoh(&buffer.slice(0..bytes), &mut out[..]).map_err(err)?;
            }
            outputs.push(out);
        }
        stream.synchronize().map_err(err)?;
        Ok(TileOutput { outputs })
    }
}
