//! Conformance: every example block, on every backend present, gives the CPU form's bits.
//!
//! Written once and instantiated per backend by `conformance!`. Which backends must be present
//! is data ([`BACKENDS`]), not `if`s in the tests: the CPU always; the PTX interpreter always
//! (the CUDA form as xcd-forms writes it, loaded and launched as the CUDA backend does it);
//! llvmpipe's Vulkan wherever CI runs (it installs mesa-vulkan-drivers); CUDA only where a
//! driver is installed.

use xcd_runtime::{Args, Block, Par, RunOptions, Settings, WorkerChoice};

/// When a backend's absence fails the suite.
#[derive(Clone, Copy)]
enum Required {
    Always,
    InCi,
    WhenDriverPresent,
}

const BACKENDS: &[(&str, Required)] = &[
    ("cpu", Required::Always),
    ("gpu:cuda:xcd-ptxsim", Required::Always),
    ("gpu:vulkan:", Required::InCi),
    ("gpu:cuda:", Required::WhenDriverPresent),
    (NVIDIA_VULKAN, Required::WhenDriverPresent),
];

/// An NVIDIA GPU through its Vulkan driver (opened without CUDA, which otherwise serves it).
const NVIDIA_VULKAN: &str = "gpu:vulkan:NVIDIA";

/// The PTX interpreter's worker name.
const SIM: &str = "gpu:cuda:xcd-ptxsim";

/// A Par whose only worker is the first one whose name starts with `prefix`, or None.
fn par_for(prefix: &str) -> Option<Par> {
    if prefix == SIM {
        let device = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
        let inventory = xcd_engine::Inventory { devices: vec![device], notes: Vec::new() };
        let settings =
            Settings { workers: vec![WorkerChoice::named(SIM).expect("a worker name")], ..Settings::default() };
        return Some(Par::with_inventory(settings, inventory).expect("the interpreter's worker"));
    }
    if prefix == NVIDIA_VULKAN {
        let options = xcd_engine::Options { cuda: false, ..xcd_engine::Options::default() };
        let inventory = xcd_engine::discover_with(options);
        let name = inventory.devices.iter().map(|d| format!("gpu:{}", d.info().id)).find(|n| n.starts_with(prefix))?;
        let settings =
            Settings { workers: vec![WorkerChoice::named(&name).expect("a worker name")], ..Settings::default() };
        return Some(Par::with_inventory(settings, inventory).expect("the NVIDIA Vulkan worker"));
    }
    let all = Par::new(Settings::default()).expect("local workers");
    let name = all.worker_names().into_iter().find(|n| n.starts_with(prefix))?.to_owned();
    let choice = if name == "cpu" { WorkerChoice::Cpu } else { WorkerChoice::named(&name).expect("a worker name") };
    Some(Par::new(Settings { workers: vec![choice], ..Settings::default() }).expect("the named worker"))
}

fn par_or_skip(prefix: &str) -> Option<Par> {
    let required = BACKENDS.iter().find(|(p, _)| *p == prefix).map(|(_, r)| *r).expect("a listed backend");
    let par = par_for(prefix);
    if par.is_none() {
        let must = match required {
            Required::Always => true,
            Required::InCi => std::env::var_os("CI").is_some(),
            // CUDA wherever the NVIDIA driver is; its Vulkan driver where XCD_NVIDIA_VULKAN says
            // the machine has one (scripts/gpu-check sets it after asking vulkaninfo).
            Required::WhenDriverPresent if prefix == "gpu:cuda:" => {
                std::path::Path::new("/proc/driver/nvidia").exists()
            }
            Required::WhenDriverPresent => std::env::var_os("XCD_NVIDIA_VULKAN").is_some(),
        };
        assert!(!must, "backend {prefix} must be present here, and is not");
        eprintln!("skipped: no {prefix} worker on this machine");
    }
    par
}

/// A deterministic source of awkward floats: normal, tiny, negative, zero, infinite, and NaNs
/// with payloads (each form must store the canonical NaN).
fn floats(n: usize, seed: u32, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            match i % 17 {
                0 => 0.0,
                1 => -0.0,
                2 => f32::MIN_POSITIVE * 0.5,
                3 => f32::from_bits(0x7fc0_0001),
                4 => f32::from_bits(0xffc0_0000),
                5 => f32::NEG_INFINITY,
                _ => (state as f32 / u32::MAX as f32 - 0.5) * 2.0 * scale,
            }
        })
        .collect()
}

/// Runs block `name` on `par` with every tile `tile` items (None: the scheduler's choice); returns
/// the bytes of every array the block writes.
fn outputs(par: &Par, block: &Block, n: u32, tile: Option<u32>) -> Vec<Vec<u8>> {
    let options = RunOptions { tile_items: tile, progress: None };
    match block.desc.name.as_str() {
        "escape" => {
            let (w, h) = (37u32, n / 37);
            let mut counts = vec![u32::MAX; n as usize];
            par.run_with(block, n, Args::new().u32(w).u32(h).u32(300).output(&mut counts), &options)
                .expect("escape runs");
            vec![bytemuck::cast_slice(&counts).to_vec()]
        }
        "saxpy" => {
            let x = floats(n as usize, 1, 1e3);
            let mut y = floats(n as usize, 2, 1e-3);
            par.run_with(block, n, Args::new().f32(1.000_123).input(&x).inout(&mut y), &options).expect("saxpy runs");
            vec![bytemuck::cast_slice(&y).to_vec()]
        }
        "poly" => {
            let x = floats(n as usize, 3, 2.0);
            let coef = floats(7, 4, 3.0);
            let mut y = vec![f32::NAN; n as usize];
            // terms past the coefficients read as zero in every form.
            par.run_with(block, n, Args::new().u32(9).input(&x).whole(&coef).output(&mut y), &options)
                .expect("poly runs");
            vec![bytemuck::cast_slice(&y).to_vec()]
        }
        other => panic!("no inputs for block {other}"),
    }
}

const ITEMS: u32 = 37 * 29;
const TILE_SIZES: &[Option<u32>] = &[Some(1), Some(7), Some(64), Some(100), Some(ITEMS - 1), Some(ITEMS), None];

fn check_backend(prefix: &str) {
    let Some(par) = par_or_skip(prefix) else { return };
    let reference = par_for("cpu").expect("the cpu worker");
    for block in xcd_kernels::all() {
        let want = outputs(&reference, &block, ITEMS, Some(ITEMS));
        for &tile in TILE_SIZES {
            let got = outputs(&par, &block, ITEMS, tile);
            assert!(
                got == want,
                "{prefix}: block {} with tiles of {tile:?} items differs from the CPU form",
                block.desc.name
            );
        }
    }
}

macro_rules! conformance {
    ($($test:ident => $prefix:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                check_backend($prefix);
            }
        )*
    };
}

conformance! {
    cpu_matches_cpu_form => "cpu",
    interpreted_ptx_matches_cpu_form => "gpu:cuda:xcd-ptxsim",
    vulkan_matches_cpu_form => "gpu:vulkan:",
    cuda_matches_cpu_form => "gpu:cuda:",
    nvidia_vulkan_matches_cpu_form => "gpu:vulkan:NVIDIA",
}

#[test]
fn cpu_form_of_escape_is_the_tutorials_arithmetic() {
    let par = par_for("cpu").expect("the cpu worker");
    let got = outputs(&par, &xcd_kernels::escape(), ITEMS, Some(100));
    let want: Vec<u32> = (0..ITEMS).map(|i| xcd_kernels::escape_pixel(i, 37, ITEMS / 37, 300)).collect();
    assert_eq!(got[0], bytemuck::cast_slice::<u32, u8>(&want));
}

/// A block that carries one form only (WGSL, as a REST client sends it; or SPIR-V) is exact on
/// every backend: each device makes its own form from it.
fn check_one_form(prefix: &str, keep: fn(&xcd_wire::Forms) -> xcd_wire::Forms) {
    let Some(par) = par_or_skip(prefix) else { return };
    let reference = par_for("cpu").expect("the cpu worker");
    for block in xcd_kernels::all() {
        let want = outputs(&reference, &block, ITEMS, Some(ITEMS));
        let mut desc = (*block.desc).clone();
        desc.forms = keep(&desc.forms);
        let one_form = Block { desc: std::sync::Arc::new(desc), cpu: block.cpu };
        for tile in [Some(7), None] {
            let got = outputs(&par, &one_form, ITEMS, tile);
            assert!(
                got == want,
                "{prefix}: block {} with one form and tiles of {tile:?} differs from the CPU form",
                block.desc.name
            );
        }
    }
}

fn wgsl_only(forms: &xcd_wire::Forms) -> xcd_wire::Forms {
    xcd_wire::Forms { wgsl: forms.wgsl.clone(), ..xcd_wire::Forms::default() }
}

fn spirv_only(forms: &xcd_wire::Forms) -> xcd_wire::Forms {
    xcd_wire::Forms { spirv: forms.spirv.clone(), ..xcd_wire::Forms::default() }
}

#[test]
fn vulkan_wgsl_only_blocks_match_cpu_form() {
    check_one_form("gpu:vulkan:", wgsl_only);
}

#[test]
fn vulkan_spirv_only_blocks_match_cpu_form() {
    check_one_form("gpu:vulkan:", spirv_only);
}

#[test]
fn interpreted_ptx_of_wgsl_only_blocks_matches_cpu_form() {
    check_one_form(SIM, wgsl_only);
}

#[test]
fn interpreted_ptx_of_spirv_only_blocks_matches_cpu_form() {
    check_one_form(SIM, spirv_only);
}
