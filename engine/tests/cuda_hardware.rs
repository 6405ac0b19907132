//! The CUDA backend against a real NVIDIA driver: what `scripts/gpu-check` runs on a machine with
//! a GPU (`cuda_hardware --nocapture`), each case printing a line of figures that starts with
//! `cuda-hardware:`. Where there is no driver (this machine, CI), the one test checks that
//! discovery says so and serves no CUDA device.
//!
//! The cases: every device named apart; a 64 MiB tile copied through and checked; a kernel that
//! never ends under a 2 s tile deadline, and how long the device takes to come back; a kernel
//! that traps; two users of one GPU in one process, one of them hung; PTX for a newer GPU than
//! this one. They run one after another in one test, since each leaves the GPU in a state the
//! next must see.

use std::sync::Arc;
use std::time::{Duration, Instant};

use xcd_engine::{DeviceHandle, EngineError, FormPolicy, Options, TileJob, owner};
use xcd_wire::{Access, ArrayRole, ArraySpec, BackendKind, BlockDesc, Forms, Tile};

/// `y[i] = x[i] ^ 0x5a5a5a5a`.
const FLIP: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn flip(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = x[i] ^ 0x5a5a5a5au;
}
"#;

/// Never ends while the tile has items: a `while(1)` the compiler cannot remove.
const SPIN: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn spin(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    var v = x[i];
    while (tile.count > 0u) {
        v = v * 1664525u + 1013904223u;
        y[i] = v;
    }
}
"#;

/// A kernel that executes PTX's `trap`: the context is unusable afterwards.
const TRAP: &str = ".version 6.0\n.target sm_60\n.address_size 64\n\n.visible .entry trap()\n{\n\ttrap;\n\tret;\n}\n";

/// PTX that declares a GPU newer than any made so far.
const TOO_NEW: &str = ".version 6.0\n.target sm_990\n.address_size 64\n\n.visible .entry flip()\n{\n\tret;\n}\n";

fn block(name: &str, forms: Forms) -> Arc<BlockDesc> {
    Arc::new(BlockDesc {
        name: name.into(),
        entry: name.into(),
        arrays: vec![
            ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
            ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
        ],
        params: Vec::new(),
        forms,
    })
}

fn wgsl(name: &str, text: &str) -> Arc<BlockDesc> {
    block(name, Forms { wgsl: Some(text.into()), ..Forms::default() })
}

fn job(desc: &BlockDesc, x: &[u32]) -> TileJob {
    TileJob {
        block: desc.id(),
        tile: Tile { start: 0, count: x.len() as u32 },
        params: Vec::new(),
        inputs: vec![bytes::Bytes::copy_from_slice(bytemuck::cast_slice(x))],
        whole: Vec::new(),
    }
}

/// This machine's CUDA devices, each with its own owner thread and `deadline`, and the notes.
fn cuda(deadline: Duration, forms: FormPolicy) -> (Vec<DeviceHandle>, Vec<String>) {
    let options = Options { tile_deadline: deadline, forms, ..Options::default() };
    let inventory = xcd_engine::discover_with(options);
    let cuda = inventory.devices.into_iter().filter(|d| d.info().backend == BackendKind::Cuda).collect();
    (cuda, inventory.notes)
}

/// Waits up to `limit` for the device to be back in service; how long it took, if it came.
fn back_within(device: &DeviceHandle, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if let Ok(info) = device.status_blocking()
            && info.lost.is_none()
        {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

#[test]
fn the_cuda_path_on_this_machine() {
    let (devices, notes) = cuda(Duration::from_secs(2), FormPolicy::Remake);
    let Some(device) = devices.first().cloned() else {
        assert!(
            notes.iter().any(|n| n.starts_with("cuda: ")),
            "with no CUDA device served, discovery says why: {notes:?}"
        );
        eprintln!("cuda-hardware: no CUDA device here ({})", notes.join("; "));
        return;
    };
    named_apart(&devices);
    copy_64_mib(&device);
    never_ends(&device);
    traps();
    two_users_one_hung();
    too_new_ptx();
}

fn named_apart(devices: &[DeviceHandle]) {
    let ids: Vec<&str> = devices.iter().map(|d| d.info().id.as_str()).collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "every device has an id of its own: {ids:?}");
    println!("cuda-hardware: {} CUDA device(s), named apart: {}", ids.len(), ids.join(" | "));
    if ids.len() < 2 {
        println!("cuda-hardware: one GPU here, so identical GPUs were not seen side by side");
    }
}

fn copy_64_mib(device: &DeviceHandle) {
    let desc = wgsl("flip", FLIP);
    device.load_blocking(desc.clone()).expect("flip loads");
    let x: Vec<u32> = (0..16u32 << 20).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let started = Instant::now();
    let out = device.run_blocking(job(&desc, &x)).expect("a 64 MiB tile runs");
    let took = started.elapsed();
    let y: &[u32] = bytemuck::cast_slice(&out.outputs[0]);
    assert!(y.iter().zip(&x).all(|(y, x)| *y == x ^ 0x5a5a_5a5a), "the 64 MiB tile came back wrong");
    let gib_s = 128.0 / 1024.0 / took.as_secs_f64();
    println!(
        "cuda-hardware: 64 MiB in and 64 MiB out in {:.1} ms ({gib_s:.2} GiB/s both ways), checked",
        took.as_secs_f64() * 1e3
    );
}

fn never_ends(device: &DeviceHandle) {
    let desc = wgsl("spin", SPIN);
    device.load_blocking(desc.clone()).expect("spin loads");
    let started = Instant::now();
    let error = device.run_blocking(job(&desc, &[1; 1024])).expect_err("the kernel never ends");
    let gave_up = started.elapsed();
    assert!(matches!(error, EngineError::Deadline { .. }), "{error}");
    let back = back_within(device, Duration::from_secs(90));
    println!(
        "cuda-hardware: while(1) under a 2 s deadline: given up after {:.2} s; back in service {}",
        gave_up.as_secs_f64(),
        back.map_or_else(|| "not within 90 s".to_owned(), |t| format!("{:.1} s later", t.as_secs_f64()))
    );
    if back.is_some() {
        let flip = wgsl("flip", FLIP);
        let out = device.run_blocking(job(&flip, &[1, 2, 3])).expect("a registered block runs again");
        assert_eq!(
            bytemuck::cast_slice::<u8, u32>(&out.outputs[0]),
            [1 ^ 0x5a5a_5a5a, 2 ^ 0x5a5a_5a5a, 3 ^ 0x5a5a_5a5a]
        );
    } else {
        println!("cuda-hardware: still out of service: {}", device.out_of_service().unwrap_or_default());
    }
}

fn traps() {
    let (devices, _) = cuda(Duration::from_secs(10), FormPolicy::Trust);
    let device = &devices[0];
    let desc = block("trap", Forms { ptx: Some(TRAP.into()), ..Forms::default() });
    device.load_blocking(desc.clone()).expect("the trapping kernel loads");
    let error = device.run_blocking(job(&desc, &[0; 64])).expect_err("the kernel traps");
    let lost = device.out_of_service();
    println!("cuda-hardware: a kernel that traps: {error}; out of service: {}", lost.is_some());
    assert!(matches!(error, EngineError::DeviceLost { .. }), "a trap leaves the context unusable: {error}");
    let back = back_within(device, Duration::from_secs(60));
    println!(
        "cuda-hardware: after the trap, back in service {}",
        back.map_or_else(|| "not within 60 s".to_owned(), |t| format!("{:.1} s later", t.as_secs_f64()))
    );
}

fn two_users_one_hung() {
    let (first, _) = cuda(Duration::from_secs(30), FormPolicy::Remake);
    let (second, _) = cuda(Duration::from_secs(30), FormPolicy::Remake);
    let (hung, other) = (first[0].clone(), second[0].clone());
    let spin = wgsl("spin", SPIN);
    hung.load_blocking(spin.clone()).expect("spin loads");
    let spinning = std::thread::spawn(move || hung.run_blocking(job(&spin, &[1; 1024])));
    std::thread::sleep(Duration::from_millis(500));
    let flip = wgsl("flip", FLIP);
    other.load_blocking(flip.clone()).expect("flip loads beside a hung kernel");
    let x: Vec<u32> = (0..1u32 << 20).collect();
    let started = Instant::now();
    let out = other.run_blocking(job(&flip, &x));
    let took = started.elapsed();
    let right = out.as_ref().is_ok_and(|o| {
        bytemuck::cast_slice::<u8, u32>(&o.outputs[0]).iter().zip(&x).all(|(y, x)| *y == x ^ 0x5a5a_5a5a)
    });
    println!(
        "cuda-hardware: two users of one GPU, one hung: the other's 4 MiB tile {} in {:.1} ms",
        if right { "ran right" } else { "failed" },
        took.as_secs_f64() * 1e3
    );
    assert!(right, "the other user's tile: {:?}", out.err());
    let hung = spinning.join().expect("the hung user's thread");
    assert!(matches!(hung, Err(EngineError::Deadline { .. })), "{:?}", hung.err());
}

fn too_new_ptx() {
    let (devices, _) = cuda(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Trust);
    let desc = block("flip", Forms { ptx: Some(TOO_NEW.into()), ..Forms::default() });
    let error = devices[0].load_blocking(desc).expect_err("PTX for a newer GPU is refused");
    println!("cuda-hardware: PTX for sm_990: {error}");
    assert!(error.to_string().contains("newer than this GPU"), "{error}");
}
