//! What the random kernels do not reach: local arrays indexed at run time (which the PTX writer
//! keeps in local memory past 8 elements, in registers below), vectors and structs in storage
//! arrays, a struct stored whole, vector math, a helper taking a pointer. Each kernel runs on
//! the PTX interpreter and on llvmpipe through the engine, against its result computed here, and
//! its PTX must assemble with ptxas.

use std::sync::Arc;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, TileJob};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, Tile};

fn block(wgsl: &str, arrays: &[(u32, ArrayRole)]) -> Arc<BlockDesc> {
    Arc::new(BlockDesc {
        name: "feature".into(),
        entry: "k".into(),
        arrays: arrays
            .iter()
            .enumerate()
            .map(|(i, &(elem_size, role))| ArraySpec { name: format!("a{i}"), elem_size, role })
            .collect(),
        params: Vec::new(),
        forms: Forms { wgsl: Some(wgsl.into()), ..Forms::default() },
    })
}

fn devices() -> Vec<DeviceHandle> {
    let mut out = vec![xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()))];
    out.extend(xcd_engine::discover().devices.into_iter().filter(|d| d.info().id.starts_with("vulkan:")));
    out
}

/// Runs one tile of `count` items with `input`; the output's bytes on each device. The kernel's
/// PTX must assemble for sm_60 and sm_90 too.
fn run(block: &Arc<BlockDesc>, count: u32, input: &[u8]) -> Vec<(String, Vec<u8>)> {
    if let Some(ptxas) = xcd_ptxsim::ptxas::required() {
        let ptx = xcd_forms::Kernel::for_block(block).and_then(|k| k.ptx()).expect("PTX");
        xcd_ptxsim::ptxas::check(&ptxas, &ptx, "feature").unwrap_or_else(|e| panic!("{e}"));
    }
    devices()
        .into_iter()
        .map(|device| {
            let id = device.load_blocking(block.clone()).unwrap_or_else(|e| panic!("{}: {e}", device.info().id));
            let job = TileJob {
                block: id,
                tile: Tile { start: 0, count },
                params: Vec::new(),
                inputs: vec![Bytes::copy_from_slice(input)],
                whole: Vec::new(),
            };
            let out = device.run_blocking(job).unwrap_or_else(|e| panic!("{}: {e}", device.info().id));
            (device.info().id.clone(), out.outputs[0].clone())
        })
        .collect()
}

fn words(v: impl IntoIterator<Item = u32>) -> Vec<u8> {
    v.into_iter().flat_map(u32::to_le_bytes).collect()
}

const LOCAL_ARRAYS: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;

// Sixteen elements indexed at run time: local memory in PTX.
fn fib(n: u32) -> u32 {
    var t: array<u32, 16>;
    t[0] = 0u;
    t[1] = 1u;
    for (var k = 2u; k < 16u; k = k + 1u) {
        t[k] = t[k - 1u] + t[k - 2u];
    }
    return t[n];
}

// A pointer argument into a small local array (registers in PTX), indexed at run time.
fn bump(p: ptr<function, array<u32, 4>>, at: u32) {
    (*p)[at] = (*p)[at] + 100u;
}

@compute @workgroup_size(64)
fn k(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    var small = array<u32, 4>(1u, 2u, 3u, 4u);
    bump(&small, x[i] & 7u);
    y[i] = fib(x[i]) + small[x[i] & 3u] * 1000u + small[x[i] & 7u] * 100000u;
}
"#;

#[test]
fn local_arrays_indexed_at_run_time_read_and_write_as_naga_bounds_them() {
    let b = block(LOCAL_ARRAYS, &[(4, ArrayRole::PerItem(Access::In)), (4, ArrayRole::PerItem(Access::Out))]);
    let x: Vec<u32> = (0..40).collect();
    let want = words(x.iter().map(|&n| {
        let fib = if n < 16 { (0..n).fold((0u32, 1u32), |(a, b), _| (b, a + b)).0 } else { 0 };
        let mut small = [1u32, 2, 3, 4];
        if let Some(v) = small.get_mut((n & 7) as usize) {
            *v += 100;
        }
        let at = |k: u32| small.get(k as usize).copied().unwrap_or(0);
        fib + at(n & 3) * 1000 + at(n & 7) * 100_000
    }));
    for (device, got) in run(&b, 40, &words(x)) {
        assert_eq!(got, want, "{device}");
    }
}

const VECTORS_AND_STRUCTS: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
struct P { a: f32, b: u32, c: vec2<f32> }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> p: array<P>;

@compute @workgroup_size(64)
fn k(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    let q = v[i];
    let d = dot(q.xy, q.zw) + length(q.xyz) - distance(q.xy, q.wz);
    let n = normalize(q.xyz);
    let c = cross(q.xyz, vec3<f32>(1.0, 2.0, 3.0));
    p[i] = P(d * 2.0, u32(max(q.x, 0.0)) + 1u, vec2<f32>(n.y + c.z, mix(q.x, q.y, 0.25)));
}
"#;

#[test]
fn vectors_and_structs_in_storage_arrays_give_the_exact_bits() {
    let b = block(VECTORS_AND_STRUCTS, &[(16, ArrayRole::PerItem(Access::In)), (16, ArrayRole::PerItem(Access::Out))]);
    let vs: Vec<[f32; 4]> = (0..37)
        .map(|i| {
            let f = i as f32;
            [f * 0.37 - 3.0, 1.0 / (f + 1.0), -f * 1.25, f32::from_bits(0x3f80_0000 + i * 12345)]
        })
        .chain([[0.0, 0.0, 0.0, 0.0], [f32::NAN, 1.0, 2.0, 3.0]])
        .collect();
    let mut want = Vec::new();
    for &[x, y, z, w] in &vs {
        // dot, length, distance, normalize, cross and mix as the exactness pass writes them out.
        let len3 = (x * x + y * y + z * z).sqrt();
        let d = (x * z + y * w) + len3 - ((x - w) * (x - w) + (y - z) * (y - z)).sqrt();
        let n_y = y / len3;
        let c_z = x * 2.0 - y * 1.0;
        let max = if x < 0.0 { 0.0 } else { x };
        let mix = x * (1.0 - 0.25) + y * 0.25;
        let canon = |v: f32| xcd_runtime::canonical(v).to_bits();
        for word in [canon(d * 2.0), xcd_runtime::to_u32(max).wrapping_add(1), canon(n_y + c_z), canon(mix)] {
            want.extend(word.to_le_bytes());
        }
    }
    let input: Vec<u8> = vs.iter().flat_map(|q| q.iter().flat_map(|f| f.to_le_bytes())).collect();
    for (device, got) in run(&b, vs.len() as u32, &input) {
        assert_eq!(got, want, "{device}");
    }
}
