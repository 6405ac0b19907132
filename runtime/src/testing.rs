//! Test helpers: a tiny block with a CPU form and a plain sequential answer, for scheduler and placement
//! tests that need no device.

use std::sync::Arc;

use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec};

use crate::block::{Block, CpuTile};
use crate::worker::{CpuWorker, RunCtx};

pub(crate) fn square_plus(t: &mut CpuTile<'_>) {
    let k = t.param_u32(0);
    let x = t.read::<u32>(0);
    for (y, &x) in t.take_write::<u32>(1).iter_mut().zip(x) {
        *y = x.wrapping_mul(x).wrapping_add(k);
    }
}

pub(crate) fn ctx() -> RunCtx {
    let desc = BlockDesc {
        name: "square_plus".into(),
        entry: "main".into(),
        arrays: vec![
            ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
            ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
        ],
        params: vec![ParamSpec { name: "k".into(), kind: ParamKind::U32 }],
        forms: Forms { wgsl: Some(String::new()), ..Forms::default() },
    };
    let id = desc.id();
    RunCtx {
        block: Block { desc: Arc::new(desc), cpu: square_plus },
        id,
        items: 0,
        params: vec![7],
        whole: Vec::new(),
        timeline: Default::default(),
    }
}

pub(crate) fn cpu() -> CpuWorker {
    CpuWorker::new(rayon::ThreadPoolBuilder::new().num_threads(2).build().expect("threads"))
}

pub(crate) fn expected(n: u32) -> Vec<u32> {
    (0..n).map(|i| i.wrapping_mul(2_654_435_761)).map(|x| x.wrapping_mul(x).wrapping_add(7)).collect()
}

/// The id of a test's own worker, of the CPU's kind, named `name`.
pub(crate) fn test_id(name: &str) -> crate::worker::WorkerId {
    crate::worker::WorkerId { kind: crate::worker::WorkerKind::Cpu, name: name.into(), daemon: None }
}
