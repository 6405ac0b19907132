//! The blocks the harness runs: `copy` (`y[i] = x[i]`, u32), with its CPU form.

use std::sync::Arc;

use xcd_runtime::{Block, CpuTile};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms};

const COPY: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn copy(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = x[i];
}
"#;

/// `y[i] = x[i]` over u32 items: bytes in and out, nearly no arithmetic.
pub(crate) fn copy() -> Block {
    Block {
        desc: Arc::new(BlockDesc {
            name: "copy".into(),
            entry: "copy".into(),
            arrays: vec![
                ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
                ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
            ],
            params: Vec::new(),
            forms: Forms { wgsl: Some(COPY.into()), ..Forms::default() },
        }),
        cpu: copy_cpu,
    }
}

fn copy_cpu(t: &mut CpuTile<'_>) {
    let x = t.read::<u32>(0);
    t.take_write::<u32>(1).copy_from_slice(x);
}
