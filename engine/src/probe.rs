//! The small kernel a device must run right before it serves again after being out of service
//! (`Backend::recover`): `y[i] = start + i + 1` over 1000 items, made into each device's form
//! from its WGSL like any block. Owns the kernel and the check of its results; each backend runs
//! it through its own `load` and `run`.

use std::time::Duration;

use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, Tile};

use crate::{EngineError, TileJob, TileOutput};

/// The probe's WGSL.
const WGSL: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = tile.start + i + 1u;
}
"#;

/// Items the probe computes.
const ITEMS: u32 = 1000;

/// How long the probe may take on a reopened device.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);

/// The probe as a block.
pub(crate) fn block() -> BlockDesc {
    BlockDesc {
        name: "probe".into(),
        entry: "probe".into(),
        arrays: vec![ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) }],
        params: Vec::new(),
        forms: Forms { wgsl: Some(WGSL.into()), ..Forms::default() },
    }
}

/// The probe's one tile.
pub(crate) fn job(desc: &BlockDesc) -> TileJob {
    TileJob {
        block: desc.id(),
        tile: Tile { start: 0, count: ITEMS },
        params: Vec::new(),
        inputs: Vec::new(),
        whole: Vec::new(),
    }
}

/// Whether the probe's run computed what it should, in a person's words if not.
pub(crate) fn check(result: Result<TileOutput, EngineError>) -> Result<(), String> {
    let out = result.map_err(|e| match e {
        EngineError::Deadline { .. } => format!(
            "a reopened device did not run a small check kernel within {} s: the kernel that ran too long still holds it",
            DEADLINE.as_secs()
        ),
        other => other.to_string(),
    })?;
    let want: Vec<u8> = (1..=ITEMS).flat_map(u32::to_le_bytes).collect();
    if out.outputs.first() != Some(&want) {
        return Err("the reopened device computes wrong results".into());
    }
    Ok(())
}
