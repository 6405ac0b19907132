//! The wgpu backend on the real software Vulkan device (llvmpipe): loading, refusals that say
//! what to do, and a device that keeps serving after bad jobs.

use std::sync::Arc;

use xcd_engine::{DeviceHandle, EngineError, TileJob};
use xcd_wire::WholeArray;
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec, Tile};

const DOUBLE: &str = r#"
struct Tile { start: u32, count: u32, first: u32, k: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> add: array<u32>;
@group(0) @binding(3) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn double(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = 2u * x[i] + tile.k + add[0] + (tile.start + i) * 0u + arrayLength(&add);
}
"#;

fn desc(forms: Forms) -> Arc<BlockDesc> {
    Arc::new(BlockDesc {
        name: "double".into(),
        entry: "double".into(),
        arrays: vec![
            ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
            ArraySpec { name: "add".into(), elem_size: 4, role: ArrayRole::Whole },
            ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
        ],
        params: vec![ParamSpec { name: "k".into(), kind: ParamKind::U32 }],
        forms,
    })
}

fn spirv_block() -> Arc<BlockDesc> {
    let made = xcd_forms::make_forms(DOUBLE, "double").expect("forms");
    desc(Forms { wgsl: Some(DOUBLE.into()), spirv: Some(made.spirv), ..Forms::default() })
}

fn vulkan() -> Option<DeviceHandle> {
    let device = xcd_engine::discover().devices.into_iter().find(|d| d.info().id.starts_with("vulkan:"));
    if device.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI installs llvmpipe; a Vulkan device must be found");
        eprintln!("skipped: no Vulkan device here");
    }
    device
}

fn job(block: &BlockDesc, start: u32, x: &[u32]) -> TileJob {
    TileJob {
        block: block.id(),
        tile: Tile { start, count: x.len() as u32 },
        params: vec![5],
        inputs: vec![bytes::Bytes::copy_from_slice(bytemuck::cast_slice(x))],
        whole: vec![WholeArray::new(Arc::from(bytemuck::cast_slice::<u32, u8>(&[100, 0, 0])))],
    }
}

fn result(out: &xcd_engine::TileOutput) -> Vec<u32> {
    bytemuck::cast_slice(&out.outputs[0]).to_vec()
}

#[test]
fn runs_tiles_of_many_sizes_through_spirv_passthrough_and_wgsl() {
    let Some(device) = vulkan() else { return };
    let wgsl_only = desc(Forms { wgsl: Some(DOUBLE.into()), ..Forms::default() });
    for block in [spirv_block(), wgsl_only] {
        device.load_blocking(block.clone()).expect("loads");
        for n in [1usize, 63, 64, 65, 1000, 70_001] {
            let x: Vec<u32> = (0..n as u32).collect();
            let out = device.run_blocking(job(&block, 9, &x)).expect("runs");
            let want: Vec<u32> = x.iter().map(|v| 2 * v + 5 + 100 + 3).collect();
            assert_eq!(result(&out), want, "n = {n}");
        }
    }
}

#[test]
fn refusals_say_what_to_do_and_the_device_keeps_serving() {
    let Some(device) = vulkan() else { return };
    let ptx_only = desc(Forms { ptx: Some("// no".into()), ..Forms::default() });
    let e = device.load_blocking(ptx_only).expect_err("no form for Vulkan");
    assert!(matches!(e, EngineError::NoForm { .. }), "{e}");
    assert!(e.to_string().contains("send the block's WGSL"), "{e}");

    let block = spirv_block();
    let e = device.run_blocking(job(&block, 0, &[1, 2])).expect_err("not loaded yet");
    assert!(matches!(e, EngineError::NotLoaded(_)), "{e}");
    device.load_blocking(block.clone()).expect("loads");

    let mut short = job(&block, 0, &[1, 2, 3]);
    let len = short.inputs[0].len();
    short.inputs[0].truncate(len - 1);
    assert!(matches!(device.run_blocking(short), Err(EngineError::BadJob(m)) if m.contains("needs 12 bytes")));
    let mut no_params = job(&block, 0, &[1]);
    no_params.params.clear();
    assert!(matches!(device.run_blocking(no_params), Err(EngineError::BadJob(_))));
    let mut empty_whole = job(&block, 0, &[1]);
    empty_whole.whole[0] = WholeArray::new(Arc::from(Vec::new()));
    assert!(matches!(device.run_blocking(empty_whole), Err(EngineError::BadJob(_))));
    let mut empty_tile = job(&block, 0, &[]);
    empty_tile.inputs[0].clear();
    assert!(matches!(device.run_blocking(empty_tile), Err(EngineError::BadJob(_))));
    let past_end = job(&block, u32::MAX, &[1, 2]);
    assert!(matches!(device.run_blocking(past_end), Err(EngineError::BadJob(_))));

    let out = device.run_blocking(job(&block, 0, &[1, 2])).expect("still serves");
    assert_eq!(result(&out), vec![110, 112]);
    let status = device.status_blocking().expect("status");
    assert_eq!(status.id, device.info().id);
}

#[test]
fn a_tile_larger_than_one_dispatch_is_split_across_dispatches() {
    let Some(device) = vulkan() else { return };
    let block = spirv_block();
    device.load_blocking(block.clone()).expect("loads");
    // 65535 workgroups of 64 is the usual per-dispatch limit: go past it.
    let n = 65_535 * 64 + 1_000;
    let x: Vec<u32> = (0..n as u32).collect();
    let out = device.run_blocking(job(&block, 0, &x)).expect("runs");
    let got = result(&out);
    assert_eq!(got.len(), n);
    assert!(got.iter().zip(&x).all(|(g, v)| *g == 2 * v + 108), "a dispatch's items are wrong");
}

/// A kernel over f32: `y[i] = x[i] * SCALE`, after a loop of `tile.n` steps that ends with the
/// right value only if it runs them all.
const SCALED: &str = r#"
const SCALE: f32 = SCALE_VALUE;
struct Tile { start: u32, count: u32, first: u32, n: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn scaled(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    var k = 0u;
    loop {
        if (k >= tile.n) { break; }
        k = k + 1u;
    }
    y[i] = x[i] * SCALE + f32(k - tile.n);
}
"#;

fn scaled(scale: &str) -> Arc<BlockDesc> {
    Arc::new(BlockDesc {
        name: "scaled".into(),
        entry: "scaled".into(),
        arrays: vec![
            ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
            ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
        ],
        params: vec![ParamSpec { name: "n".into(), kind: ParamKind::U32 }],
        forms: Forms { wgsl: Some(SCALED.replace("SCALE_VALUE", scale)), ..Forms::default() },
    })
}

fn run_scaled(device: &DeviceHandle, block: &Arc<BlockDesc>, n: u32, x: &[f32]) -> Result<Vec<f32>, EngineError> {
    let id = device.load_blocking(block.clone())?;
    let job = TileJob {
        block: id,
        tile: Tile { start: 0, count: x.len() as u32 },
        params: vec![n],
        inputs: vec![bytes::Bytes::copy_from_slice(bytemuck::cast_slice(x))],
        whole: Vec::new(),
    };
    Ok(bytemuck::cast_slice(&device.run_blocking(job)?.outputs[0]).to_vec())
}

/// llvmpipe cuts long loops and flushes subnormals: the forms notice both, and the device declines
/// the tile (it would run elsewhere) instead of giving another answer; it stays in service.
#[test]
fn a_cpu_device_declines_the_tiles_it_cannot_compute_exactly() {
    let Some(device) = vulkan() else { return };
    if !device.info().cpu {
        eprintln!("skipped: {} computes every tile exactly", device.info().id);
        return;
    }
    let normal = scaled("2.0");
    assert_eq!(run_scaled(&device, &normal, 100, &[1.5, -2.0]).expect("runs"), [3.0, -4.0]);
    let reason = |r: Result<Vec<f32>, EngineError>| match r {
        Err(EngineError::Inexact { reason, .. }) => reason,
        other => panic!("expected the tile to be declined, got {other:?}"),
    };
    assert!(reason(run_scaled(&device, &normal, 70_000, &[1.0])).contains("cut a loop short"));
    assert!(reason(run_scaled(&device, &normal, 1, &[f32::MIN_POSITIVE / 4.0])).contains("subnormal"));
    // A product whose exact value is subnormal, from normal operands.
    assert!(reason(run_scaled(&device, &scaled("1e-30"), 1, &[1e-10])).contains("subnormal"));
    assert!(reason(run_scaled(&device, &scaled("1e-40"), 1, &[1.0])).contains("subnormal"));
    // NaN, infinities and signed zeros are not subnormal: computed, exactly.
    let odd = [f32::NAN, f32::INFINITY, -0.0, 0.0];
    let got = run_scaled(&device, &normal, 1, &odd).expect("runs");
    let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
    // -0 * 2 is -0, and -0 + f32(0u) is +0, as IEEE says.
    assert_eq!(bits, [0x7fc0_0000, f32::INFINITY.to_bits(), 0, 0]);
    assert_eq!(run_scaled(&device, &normal, 3, &[4.0]).expect("still serving"), [8.0]);
}
