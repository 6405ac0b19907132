//! The CUDA backend against a driver, each case printing a line of figures that starts with
//! `cuda-hardware:`. It runs two ways:
//! - on a machine with an NVIDIA GPU, against its driver: `scripts/gpu-check` runs this program
//!   (`cuda_hardware --nocapture --test-threads 1 --skip stand_in`);
//! - here and in CI, against the stand-in driver library (`fakecuda/`, which plays an R535
//!   driver and runs kernels through the PTX interpreter): each `stand_in_*` test runs one of the
//!   other tests again in a child process with the stand-in on `LD_LIBRARY_PATH`, misbehaving as
//!   its `FAKE_CUDA*` variables say. Run directly where there is no driver, a case only checks
//!   that discovery says why.
//!
//! The cases: every device named apart; a tile copied through and checked (64 MiB on a GPU); a
//! kernel that never ends under a 2 s tile deadline, how long the device takes to come back and
//! how long status takes meanwhile; a kernel that traps, with the device's free memory before and
//! after and a right tile after it; two users of one GPU in one process, one of them hung; PTX for
//! a newer GPU, PTX that declares more parameters than the launch, PTX the driver's compiler
//! refuses (its log reaches the error); kernels named like PTX instructions or MSL keywords; a
//! second user of a GPU in exclusive-process mode; a program's own context, current across
//! discovery; and, on the stand-in only, a driver that never
//! answers a context's destruction or the first try to make a fresh one. The main case runs its
//! steps in one test, since each leaves the GPU in a state the next must see.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xcd_engine::{DeviceHandle, EngineError, Options, TileJob, owner};
use xcd_wire::FormPolicy;
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

/// Hand-written PTX (`tests/ptx/`, each assembled or refused by ptxas in `sim/tests/ptxas.rs`).
const TRAP: &str = include_str!("ptx/trap.ptx");
const TOO_NEW: &str = include_str!("ptx/too_new.ptx");
const EXTRA_PARAM: &str = include_str!("ptx/extra_param.ptx");
const JIT_FAILS: &str = include_str!("ptx/jit_fails.ptx");

/// Whether this run is against the stand-in driver (set by the `stand_in_*` tests for the
/// child they start).
fn stand_in() -> bool {
    std::env::var_os("XCD_CUDA_STAND_IN").is_some()
}

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

fn ptx(name: &str, text: &str) -> Arc<BlockDesc> {
    block(name, Forms { ptx: Some(text.into()), ..Forms::default() })
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

/// This machine's CUDA devices, or `None` after saying why there are none.
fn devices_here(deadline: Duration, forms: FormPolicy) -> Option<Vec<DeviceHandle>> {
    let (devices, notes) = cuda(deadline, forms);
    if devices.is_empty() {
        assert!(!stand_in(), "the stand-in driver serves two GPUs: {notes:?}");
        assert!(
            notes.iter().any(|n| n.starts_with("cuda: ")),
            "with no CUDA device served, discovery says why: {notes:?}"
        );
        println!("cuda-hardware: no CUDA device here ({})", notes.join("; "));
        return None;
    }
    Some(devices)
}

/// How a device came back: how long it took, and the longest a status call took meanwhile.
struct Back {
    after: Option<Duration>,
    slowest_status: Duration,
    statuses: usize,
}

impl Back {
    fn words(&self) -> String {
        let back = self.after.map_or_else(|| "not yet".to_owned(), |t| format!("after {:.1} s", t.as_secs_f64()));
        format!(
            "back in service {back}; {} status calls meanwhile, the slowest {:.1} ms",
            self.statuses,
            self.slowest_status.as_secs_f64() * 1e3
        )
    }
}

/// Waits up to `limit` for the device to be back in service, timing each status call: a status
/// call must answer within a few seconds whatever the driver does.
fn back_within(device: &DeviceHandle, limit: Duration) -> Back {
    let started = Instant::now();
    let mut back = Back { after: None, slowest_status: Duration::ZERO, statuses: 0 };
    while started.elapsed() < limit {
        let asked = Instant::now();
        let status = device.status_blocking();
        let took = asked.elapsed();
        back.statuses += 1;
        back.slowest_status = back.slowest_status.max(took);
        assert!(took < Duration::from_secs(5), "a status call took {took:?} while the device was out of service");
        if status.is_ok_and(|info| info.lost.is_none()) {
            back.after = Some(started.elapsed());
            return back;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    back
}

/// Runs `flip` on a few items and checks them: the device computes right.
fn flips_right(device: &DeviceHandle) {
    let flip = wgsl("flip", FLIP);
    device.load_blocking(flip.clone()).expect("flip loads");
    let out = device.run_blocking(job(&flip, &[1, 2, 3])).expect("flip runs");
    assert_eq!(bytemuck::cast_slice::<u8, u32>(&out.outputs[0]), [1 ^ 0x5a5a_5a5a, 2 ^ 0x5a5a_5a5a, 3 ^ 0x5a5a_5a5a]);
}

/// The GPUs' used memory as `nvidia-smi` tells it, where it is installed.
fn nvidia_smi_used() -> String {
    Command::new("nvidia-smi")
        .args(["--query-gpu=memory.used", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or_else(|| "no nvidia-smi".to_owned(), |o| String::from_utf8_lossy(&o.stdout).trim().replace('\n', ", "))
}

#[test]
fn the_cuda_path_on_this_machine() {
    let Some(devices) = devices_here(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Remake) else { return };
    named_apart(&devices);
    copy_through(&devices[0]);
    never_ends();
    traps();
    two_users_one_hung();
    refused_ptx();
    names_of_every_kind();
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

fn copy_through(device: &DeviceHandle) {
    // The interpreter behind the stand-in runs every GPU thread on the CPU: a smaller tile.
    let mib: u32 = if stand_in() { 4 } else { 64 };
    let desc = wgsl("flip", FLIP);
    device.load_blocking(desc.clone()).expect("flip loads");
    let x: Vec<u32> = (0..mib << 18).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let started = Instant::now();
    let out = device.run_blocking(job(&desc, &x)).expect("the tile runs");
    let took = started.elapsed();
    let y: &[u32] = bytemuck::cast_slice(&out.outputs[0]);
    assert!(y.iter().zip(&x).all(|(y, x)| *y == x ^ 0x5a5a_5a5a), "the {mib} MiB tile came back wrong");
    let gib_s = f64::from(2 * mib) / 1024.0 / took.as_secs_f64();
    println!(
        "cuda-hardware: {mib} MiB in and {mib} MiB out in {:.1} ms ({gib_s:.2} GiB/s both ways), checked",
        took.as_secs_f64() * 1e3
    );
}

fn never_ends() {
    let (devices, _) = cuda(Duration::from_secs(2), FormPolicy::Remake);
    let device = &devices[0];
    let desc = wgsl("spin", SPIN);
    device.load_blocking(desc.clone()).expect("spin loads");
    let started = Instant::now();
    let error = device.run_blocking(job(&desc, &[1; 1024])).expect_err("the kernel never ends");
    let gave_up = started.elapsed();
    assert!(matches!(error, EngineError::Deadline { .. }), "{error}");
    let back = back_within(device, Duration::from_secs(90));
    println!(
        "cuda-hardware: while(1) under a 2 s deadline: given up after {:.2} s; {}",
        gave_up.as_secs_f64(),
        back.words()
    );
    if back.after.is_some() {
        flips_right(device);
    } else {
        println!("cuda-hardware: still out of service: {}", device.out_of_service().unwrap_or_default());
    }
}

fn traps() {
    let (devices, _) = cuda(Duration::from_secs(10), FormPolicy::Trust);
    let device = &devices[0];
    flips_right(device);
    let free_before = device.status_blocking().ok().and_then(|i| i.memory_free);
    let smi_before = nvidia_smi_used();
    let desc = ptx("trap", TRAP);
    device.load_blocking(desc.clone()).expect("the trapping kernel loads");
    let error = device.run_blocking(job(&desc, &[0; 64])).expect_err("the kernel traps");
    let lost = device.out_of_service();
    println!("cuda-hardware: a kernel that traps: {error}; out of service: {}", lost.is_some());
    assert!(matches!(error, EngineError::DeviceLost { .. }), "a trap leaves the context unusable: {error}");
    let back = back_within(device, Duration::from_secs(60));
    println!("cuda-hardware: after the trap, {}", back.words());
    assert!(back.after.is_some(), "the device came back: {:?}", device.out_of_service());
    flips_right(device);
    let free_after = device.status_blocking().ok().and_then(|i| i.memory_free);
    let mib = |b: Option<u64>| b.map_or_else(|| "unknown".to_owned(), |b| format!("{} MiB", b >> 20));
    println!(
        "cuda-hardware: after the trap a tile ran right; free for work {} before, {} after; nvidia-smi used {} before, {} after",
        mib(free_before),
        mib(free_after),
        smi_before,
        nvidia_smi_used()
    );
}

fn two_users_one_hung() {
    let deadline = if stand_in() { Duration::from_secs(3) } else { Duration::from_secs(30) };
    let (first, _) = cuda(deadline, FormPolicy::Remake);
    let (second, notes) = cuda(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Remake);
    let Some(other) = second.first().cloned() else {
        println!("cuda-hardware: two users of one GPU: the second has none ({})", notes.join("; "));
        return;
    };
    let hung = first[0].clone();
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

/// PTX that must never reach a launch, each refused with words that say why.
fn refused_ptx() {
    let (devices, _) = cuda(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Trust);
    let device = &devices[0];
    let error = device.load_blocking(ptx("flip", TOO_NEW)).expect_err("PTX for a newer GPU is refused");
    println!("cuda-hardware: PTX for sm_990: {error}");
    assert!(error.to_string().contains("newer than this GPU"), "{error}");
    let error = device.load_blocking(ptx("flip", EXTRA_PARAM)).expect_err("a parameter too many is refused");
    println!("cuda-hardware: PTX with a parameter more than the launch: {error}");
    assert!(error.to_string().contains("declares 8 parameters"), "{error}");
    let error = device.load_blocking(ptx("flip", JIT_FAILS)).expect_err("the driver's compiler refuses it");
    println!("cuda-hardware: PTX the driver's compiler refuses: {error}");
    assert!(error.to_string().contains("the driver's PTX compiler says: "), "its log reaches the error: {error}");
    assert!(device.out_of_service().is_none(), "refusals leave the device in service");
    flips_right(device);
}

/// Kernels named like PTX instructions and directives, MSL keywords, and names that end in a
/// digit: each loads and runs, every form naming it by the one rule (`xcd_forms::entry_symbol`).
fn names_of_every_kind() {
    let (devices, _) = cuda(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Remake);
    let device = &devices[0];
    let names = ["main", "add", "trap", "ret", "entry", "kernel", "blur2", "WARP_SZ"];
    for name in names {
        let desc = wgsl(name, &FLIP.replace("fn flip(", &format!("fn {name}(")));
        device.load_blocking(desc.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = device.run_blocking(job(&desc, &[7])).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(bytemuck::cast_slice::<u8, u32>(&out.outputs[0]), [7 ^ 0x5a5a_5a5a], "{name}");
    }
    println!("cuda-hardware: kernels named {} load and run", names.join(", "));
}

/// A second user of each GPU in this process: served a context of its own, or, in
/// exclusive-process compute mode, told why not; the first still brings its device back.
#[test]
fn a_second_user_of_each_gpu() {
    let Some(first) = devices_here(Duration::from_secs(10), FormPolicy::Trust) else { return };
    let (second, notes) = cuda(Duration::from_secs(10), FormPolicy::Remake);
    if second.len() == first.len() {
        println!("cuda-hardware: a second user gets a context of its own on each GPU (the compute mode allows it)");
        flips_right(&second[0]);
    } else {
        let said: Vec<&String> = notes.iter().filter(|n| n.contains("exclusive-process compute mode")).collect();
        assert!(!said.is_empty(), "a second user is told why it has no GPU: {notes:?}");
        println!("cuda-hardware: a second user in exclusive-process mode is told: {}", said[0]);
    }
    drop(second);
    let device = &first[0];
    let trap = ptx("trap", TRAP);
    device.load_blocking(trap.clone()).expect("the trapping kernel loads");
    device.run_blocking(job(&trap, &[0; 64])).expect_err("the kernel traps");
    let back = back_within(device, Duration::from_secs(60));
    println!("cuda-hardware: the first user's device, after a trap: {}", back.words());
    assert!(back.after.is_some(), "{:?}", device.out_of_service());
    flips_right(device);
}

/// A program that uses CUDA itself keeps its own context current across discovery, however many
/// GPUs discovery opens contexts on (each pushed onto the thread's context stack by the driver);
/// a thread with none current is left with none.
#[test]
fn discovery_leaves_the_callers_current_context_as_it_was() {
    let Some(first) = devices_here(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Remake) else { return };
    let current = || cudarc::driver::result::ctx::get_current().expect("the driver tells the current context");
    assert_eq!(current(), None, "discovery on a thread with no context current left one of its own current");
    let own = cudarc::driver::CudaContext::new(0).expect("the program's own context");
    let (second, _) = cuda(owner::DEFAULT_TILE_DEADLINE, FormPolicy::Remake);
    assert_eq!(current(), Some(own.cu_ctx()), "discovery changed the program's current context");
    own.mem_get_info().expect("the program's context still works");
    println!(
        "cuda-hardware: discovery of {} and {} device(s) left the caller's current context as it was",
        first.len(),
        second.len()
    );
}

/// On the stand-in only (its `FAKE_CUDA_DESTROY_HANGS` and `FAKE_CUDA_HANG_CREATE`): the old
/// context's destruction never returns and the first fresh context is never made, and the device
/// still comes back, status answering all along.
#[test]
fn the_cuda_path_when_the_driver_hangs() {
    if !stand_in() {
        return;
    }
    let Some(devices) = devices_here(Duration::from_secs(2), FormPolicy::Remake) else { return };
    let device = &devices[0];
    let spin = wgsl("spin", SPIN);
    device.load_blocking(spin.clone()).expect("spin loads");
    device.run_blocking(job(&spin, &[1; 64])).expect_err("the kernel never ends");
    let back = back_within(device, xcd_engine::cuda_backend::REOPEN_GIVE_UP + Duration::from_secs(60));
    println!("cuda-hardware: with a driver that hangs letting go and reopening: {}", back.words());
    assert!(back.after.is_some(), "{:?}", device.out_of_service());
    flips_right(device);
}

/// Runs test `name` of this program again with the stand-in driver as its CUDA driver, and
/// `FAKE_CUDA*` as `env` says; what it printed.
#[cfg(target_os = "linux")]
fn on_the_stand_in(name: &str, env: &[(&str, &str)]) -> String {
    let fake = xcd_e2e::FakeCuda::install();
    let log = fake.dir().join("driver.log");
    let mut command = Command::new(std::env::current_exe().expect("this test program"));
    command.args([name, "--exact", "--nocapture", "--test-threads", "1"]);
    command.env("XCD_CUDA_STAND_IN", "1").env("FAKE_CUDA_LOG", &log).envs(env.iter().copied());
    let out = fake.apply(&mut command).output().expect("the test program starts again");
    let printed = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let driver = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(out.status.success() && printed.contains("1 passed"), "{printed}\nthe stand-in's log:\n{driver}");
    println!("{printed}");
    printed + &driver
}

#[cfg(target_os = "linux")]
#[test]
fn stand_in_the_cuda_path() {
    let printed = on_the_stand_in("the_cuda_path_on_this_machine", &[]);
    assert!(printed.contains("cuda-hardware: 2 CUDA device(s), named apart"), "{printed}");
    // Each context let go was destroyed, and the device's pool trimmed before a fresh one served.
    assert!(printed.contains("allocations with it") && printed.contains("trimmed to 0 bytes"), "{printed}");
}

#[cfg(target_os = "linux")]
#[test]
fn stand_in_a_programs_own_context() {
    let printed = on_the_stand_in("discovery_leaves_the_callers_current_context_as_it_was", &[]);
    assert!(printed.contains("discovery of 2 and 2 device(s) left the caller's current context"), "{printed}");
}

#[cfg(target_os = "linux")]
#[test]
fn stand_in_exclusive_process_mode() {
    let printed = on_the_stand_in("a_second_user_of_each_gpu", &[("FAKE_CUDA_COMPUTE_MODE", "3")]);
    assert!(printed.contains("a second user in exclusive-process mode is told"), "{printed}");
    assert!(printed.contains("nvidia-smi -i 0 -c DEFAULT"), "{printed}");
}

#[cfg(target_os = "linux")]
#[test]
fn stand_in_a_driver_that_hangs() {
    // Contexts 1 and 2 are discovery's; the 3rd is the first try to bring the device back.
    let env = [("FAKE_CUDA_DESTROY_HANGS", "1"), ("FAKE_CUDA_HANG_CREATE", "3")];
    let printed = on_the_stand_in("the_cuda_path_when_the_driver_hangs", &env);
    assert!(printed.contains("context creation 3: never returns"), "{printed}");
    assert!(printed.contains("while its kernel runs: never returns"), "{printed}");
}
