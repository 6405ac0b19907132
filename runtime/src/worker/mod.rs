//! Workers: where tiles run, behind one trait. The CPU worker ([`cpu`]) runs a block's CPU form
//! across the machine's cores; a GPU worker ([`gpu`]) sends tiles to one local device through
//! the engine; a remote worker ([`remote`]) sends them to one device of a daemon, over the
//! daemon client in `crate::remote`.
//!
//! A worker gets a tile that owns its slices of the program's arrays ([`TileSlices`]). It
//! writes results into them only when the whole tile succeeded ([`TileSlices::write_outputs`]),
//! so a failed tile can run elsewhere unchanged. Who a worker is travels as a [`WorkerId`],
//! never parsed back out of its name. Which workers exist is `crate::roster`'s; scheduling
//! tiles on them is `crate::schedule`'s.

pub(crate) mod cpu;
pub(crate) mod gpu;
pub(crate) mod remote;

use xcd_engine::EngineError;
use xcd_wire::WholeArray;
pub use xcd_wire::trace::WorkerKind;
use xcd_wire::{Rope, Tile};

use crate::block::Block;
pub(crate) use cpu::CpuWorker;
pub(crate) use gpu::GpuWorker;
pub(crate) use remote::RemoteWorker;

/// Who a worker is: its kind, the name reports and settings use (`cpu`, `gpu:<device id>`,
/// `remote:<host>:<device id>`), and for a remote worker its daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerId {
    /// Its kind.
    pub kind: WorkerKind,
    /// Its name.
    pub name: String,
    /// The daemon whose device it is, for a remote worker.
    pub daemon: Option<DaemonAt>,
}

/// Where a remote worker's daemon is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonAt {
    /// `host:port`, as the program reached it.
    pub addr: String,
    /// Its host.
    pub host: String,
}

impl WorkerId {
    /// The CPU worker.
    pub fn cpu() -> WorkerId {
        WorkerId { kind: WorkerKind::Cpu, name: "cpu".into(), daemon: None }
    }

    /// The worker of a local device.
    pub fn gpu(device: &str) -> WorkerId {
        WorkerId { kind: WorkerKind::Gpu, name: format!("gpu:{device}"), daemon: None }
    }

    /// The worker of a daemon's device, its host shown as `shown` (the host, or `host:port`
    /// where one host runs several daemons).
    pub fn remote(shown: &str, device: &str, daemon: DaemonAt) -> WorkerId {
        WorkerId { kind: WorkerKind::Remote, name: format!("remote:{shown}:{device}"), daemon: Some(daemon) }
    }
}

/// What every worker is handed for a run: the block, its parameters and its whole arrays.
pub(crate) struct RunCtx {
    pub(crate) block: Block,
    /// The block's content address, computed once per run.
    pub(crate) id: xcd_wire::BlockId,
    /// Items in the run.
    pub(crate) items: u32,
    pub(crate) params: Vec<u32>,
    /// Whole arrays in binding order, hashed once per run.
    pub(crate) whole: Vec<WholeArray>,
    /// When each tile ran, for the trace record.
    pub(crate) timeline: crate::timeline::Timeline,
}

impl RunCtx {
    /// The context of a run of `block` over `n` items with `args` (checked against the block):
    /// its id computed and its whole arrays hashed, once.
    pub(crate) fn new(block: &Block, n: u32, args: &crate::args::Args<'_>) -> RunCtx {
        let whole = args
            .arrays
            .iter()
            .filter_map(|a| match a {
                crate::args::ArrayArg::Whole(d) => Some(WholeArray::new(d.clone())),
                _ => None,
            })
            .collect();
        RunCtx {
            block: block.clone(),
            id: block.desc.id(),
            items: n,
            params: args.params.iter().map(|&(_, word)| word).collect(),
            whole,
            timeline: crate::timeline::Timeline::default(),
        }
    }
}

/// One array of one tile.
#[derive(Debug)]
pub(crate) enum TileArray<'a> {
    In(&'a [u8]),
    Out(&'a mut [u8]),
    InOut(&'a mut [u8]),
    Whole,
}

/// A tile and its slices of the program's arrays, in binding order.
#[derive(Debug)]
pub(crate) struct TileSlices<'a> {
    pub(crate) tile: Tile,
    pub(crate) arrays: Vec<TileArray<'a>>,
}

impl<'a> TileSlices<'a> {
    /// Splits the tile after `items` items (0 < items < count); `elem` gives each array's
    /// element size.
    pub(crate) fn split(self, items: u32, elem: &[u32]) -> (TileSlices<'a>, TileSlices<'a>) {
        let mut head = Vec::with_capacity(self.arrays.len());
        let mut tail = Vec::with_capacity(self.arrays.len());
        for (array, &size) in self.arrays.into_iter().zip(elem) {
            let at = items as usize * size as usize;
            let (a, b) = match array {
                TileArray::In(d) => {
                    let (a, b) = d.split_at(at);
                    (TileArray::In(a), TileArray::In(b))
                }
                TileArray::Out(d) => {
                    let (a, b) = d.split_at_mut(at);
                    (TileArray::Out(a), TileArray::Out(b))
                }
                TileArray::InOut(d) => {
                    let (a, b) = d.split_at_mut(at);
                    (TileArray::InOut(a), TileArray::InOut(b))
                }
                TileArray::Whole => (TileArray::Whole, TileArray::Whole),
            };
            head.push(a);
            tail.push(b);
        }
        let t = self.tile;
        (
            TileSlices { tile: Tile { start: t.start, count: items }, arrays: head },
            TileSlices { tile: Tile { start: t.start + items, count: t.count - items }, arrays: tail },
        )
    }

    /// The tile's inputs, its in and in-out arrays in binding order: what a device is sent.
    pub(crate) fn inputs(&self) -> impl Iterator<Item = &[u8]> {
        self.arrays.iter().filter_map(|a| match a {
            TileArray::In(d) => Some(&d[..]),
            TileArray::InOut(d) => Some(&d[..]),
            TileArray::Out(_) | TileArray::Whole => None,
        })
    }

    /// Writes a device's results into the tile's out and in-out arrays, one result per array in
    /// binding order, once every one has its array's length: a tile is written whole or not
    /// at all.
    pub(crate) fn write_outputs(&mut self, worker: &WorkerId, outputs: &[&[u8]]) -> Result<(), WorkerError> {
        let mut slots: Vec<&mut [u8]> = self
            .arrays
            .iter_mut()
            .filter_map(|a| match a {
                TileArray::Out(d) | TileArray::InOut(d) => Some(&mut **d),
                TileArray::In(_) | TileArray::Whole => None,
            })
            .collect();
        let fits = slots.len() == outputs.len() && slots.iter().zip(outputs).all(|(s, o)| s.len() == o.len());
        if !fits {
            let got = outputs.iter().map(|o| o.len()).sum();
            let want = slots.iter().map(|s| s.len()).sum();
            return Err(WorkerError::ShortResult(worker.name.clone(), got, want));
        }
        for (slot, out) in slots.iter_mut().zip(outputs) {
            slot.copy_from_slice(out);
        }
        Ok(())
    }

    /// [`write_outputs`](Self::write_outputs) from the results back to back as a daemon's
    /// result frame carries them: each byte is copied once, from the pieces it arrived in
    /// straight into its array.
    pub(crate) fn write_joined(&mut self, worker: &WorkerId, joined: &Rope) -> Result<(), WorkerError> {
        let mut slots: Vec<&mut [u8]> = self
            .arrays
            .iter_mut()
            .filter_map(|a| match a {
                TileArray::Out(d) | TileArray::InOut(d) => Some(&mut **d),
                TileArray::In(_) | TileArray::Whole => None,
            })
            .collect();
        let want: usize = slots.iter().map(|s| s.len()).sum();
        if joined.len() != want {
            return Err(WorkerError::ShortResult(worker.name.clone(), joined.len(), want));
        }
        let mut rest = joined.clone();
        for slot in &mut slots {
            let len = slot.len();
            rest.split_to(len)
                .copy_to(slot)
                .map_err(|(got, want)| WorkerError::ShortResult(worker.name.clone(), got, want))?;
        }
        Ok(())
    }
}

/// Most items of a tile whose widest array must fit buffers of `max_bytes`. Devices grow their
/// buffers to the next power of two of a tile, so this stays within half the limit.
pub(crate) fn max_tile_items(desc: &xcd_wire::BlockDesc, max_bytes: u64) -> u32 {
    let widest = desc.arrays.iter().map(|a| u64::from(a.elem_size)).max().unwrap_or(4);
    u32::try_from(max_bytes / widest / 2).unwrap_or(u32::MAX).max(1)
}

/// Why a worker stopped.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The device failed or refused.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// A daemon refused, declined or broke off.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
    /// The device returned results of the wrong size.
    #[error("{0} returned {1} bytes where {2} were expected")]
    ShortResult(String, usize, usize),
    /// The worker's code panicked (a bug, reported rather than taking the program down).
    #[error("{0} panicked (a bug: please report it)")]
    Panicked(String),
}

/// Something that runs tiles.
pub(crate) trait Worker: Sync {
    /// Who it is.
    fn id(&self) -> &WorkerId;
    /// The name reports use: `cpu`, `gpu:<device id>`, `remote:<host>:<device id>`.
    fn name(&self) -> &str {
        &self.id().name
    }
    /// What the worker is, for the report: `gpu worker gpu:…`.
    fn about(&self) -> String {
        format!("worker {}", self.name())
    }
    /// Tiles this worker runs at once, each on its own thread (a remote worker's depth).
    fn lanes(&self) -> usize {
        1
    }
    /// The fixed time a tile spends getting to the device and back (a daemon's round trip),
    /// which its lanes hide: the scheduler leaves it out of the worker's pace.
    fn round_trip(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
    /// Most items one tile of this block may hold on this worker.
    fn max_tile(&self, _ctx: &RunCtx) -> u32 {
        u32::MAX
    }
    /// Readies the worker for a run (loads the block on a device).
    fn prepare(&self, ctx: &RunCtx) -> Result<(), WorkerError>;
    /// Runs one tile, writing its results in place only on success.
    fn run_tile(&self, ctx: &RunCtx, tile: &mut TileSlices<'_>) -> Result<(), WorkerError>;
    /// What the report should say of how this worker ran its tiles in the last run, if anything
    /// (a device that could not run some exactly, and what ran them instead).
    fn note(&self) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    #[test]
    fn results_are_written_whole_or_not_at_all() {
        let (x, mut y, mut z) = ([1u8, 2], [0u8; 2], [9u8; 3]);
        let mut tile = TileSlices {
            tile: Tile { start: 0, count: 2 },
            arrays: vec![TileArray::In(&x), TileArray::Out(&mut y), TileArray::Whole, TileArray::InOut(&mut z)],
        };
        assert_eq!(tile.inputs().collect::<Vec<_>>(), [&[1u8, 2][..], &[9, 9, 9]]);
        let gpu = WorkerId::gpu("vulkan:x");
        let short = tile.write_joined(&gpu, &Rope::one(Bytes::from_static(&[5, 6, 7, 8]))).expect_err("one byte short");
        assert_eq!(short.to_string(), "gpu:vulkan:x returned 4 bytes where 5 were expected");
        let wrong_split = tile.write_outputs(&gpu, &[&[5], &[6, 7, 8, 9]]).expect_err("split wrong");
        assert!(matches!(wrong_split, WorkerError::ShortResult(..)));
        assert_eq!(tile.arrays.len(), 4);
        tile.write_joined(&gpu, &Rope::one(Bytes::from_static(&[5, 6, 7, 8, 9]))).expect("fits");
        drop(tile);
        assert_eq!((y, z), ([5, 6], [7, 8, 9]));
    }
}
