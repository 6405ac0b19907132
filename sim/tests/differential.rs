//! Differential testing: random kernels (xcd_ptxsim::kernelgen) must give the same bits as their
//! reference evaluation on llvmpipe (SPIR-V made by xcd-forms, through the engine) and on the
//! PTX interpreter (PTX made by xcd-forms, launched as the CUDA backend launches it), and their
//! PTX must assemble with ptxas for sm_60 and sm_90.
//!
//! The kernels call the math library's `exp`, `exp2`, `log`, `log2`, `sin`, `cos`, `tan`, `asin`,
//! `acos`, `atan`, `atan2`, `inverseSqrt`, `degrees`, `radians`, `ldexp`, `fma` and `pow` too, and take `%` of floats (checked
//! against CORE-MATH's, correctly rounded, exact products and remainders, and Rust's fused
//! `mul_add`).
//! `XCD_DIFF_KERNELS` sets how many kernels (default 40), `XCD_DIFF_SEED` the first seed;
//! scripts/difftest runs many in a release build and prints the figures for docs/kernels.md.

use std::sync::Arc;

use bytes::Bytes;
use xcd_engine::{DeviceHandle, TileJob};
use xcd_ptxsim::kernelgen::{self as kg, eval};
use xcd_wire::WholeArray;
use xcd_wire::{BlockDesc, Tile};

/// Items per run, and the tiles each device runs them in (odd sizes, a tile of one).
const ITEMS: usize = 300;
const TILES: [(u32, u32); 4] = [(0, 97), (97, 1), (98, 64), (162, 138)];

fn desc(wgsl: String) -> BlockDesc {
    kg::block_desc(wgsl)
}

fn words(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Runs every tile on `device`; returns o and g for the whole run, and how many tiles the device
/// declined as inexact (those take the reference's bits, as if run elsewhere).
fn on_device(
    device: &DeviceHandle,
    desc: &Arc<BlockDesc>,
    inputs: &eval::Inputs,
    kernel: &kg::Kernel,
) -> Result<(Vec<u8>, Vec<u8>, usize), String> {
    let id = device.load_blocking(desc.clone()).map_err(|e| e.to_string())?;
    let whole = WholeArray::new(Arc::from(words(&inputs.w.iter().map(|&x| x as u32).collect::<Vec<_>>())));
    let (mut o, mut g, mut declined) = (Vec::new(), Vec::new(), 0);
    for (start, count) in TILES {
        let range = start as usize..(start + count) as usize;
        let job = TileJob {
            block: id,
            tile: Tile { start, count },
            params: inputs.p.to_vec(),
            inputs: vec![Bytes::from(words(&inputs.a[range.clone()])), Bytes::from(words(&inputs.b[range]))],
            whole: vec![whole.clone()],
        };
        match device.run_blocking(job) {
            Ok(out) => {
                o.extend_from_slice(&out.outputs[0]);
                g.extend_from_slice(&out.outputs[1]);
            }
            Err(xcd_engine::EngineError::Inexact { reason, .. }) => {
                declined += 1;
                if std::env::var_os("XCD_DIFF_VERBOSE").is_some() {
                    eprintln!("declined: {reason}");
                }
                let (to, tg) = eval::run(kernel, inputs, start as usize, count);
                o.extend(words(&to));
                g.extend(words(&tg));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok((o, g, declined))
}

fn reference(k: &kg::Kernel, inputs: &eval::Inputs) -> (Vec<u8>, Vec<u8>) {
    let (mut o, mut g) = (Vec::new(), Vec::new());
    for (start, count) in TILES {
        let (to, tg) = eval::run(k, inputs, start as usize, count);
        o.extend(words(&to));
        g.extend(words(&tg));
    }
    (o, g)
}

/// The first item where two results differ, described.
fn first_difference(name: &str, want: &(Vec<u8>, Vec<u8>), got: &(Vec<u8>, Vec<u8>)) -> Option<String> {
    for (array, (w, g)) in [("o", (&want.0, &got.0)), ("g", (&want.1, &got.1))] {
        if let Some(item) = (0..w.len() / 4).find(|&i| w[4 * i..4 * i + 4] != g[4 * i..4 * i + 4]) {
            let word = |v: &[u8]| u32::from_le_bytes([v[4 * item], v[4 * item + 1], v[4 * item + 2], v[4 * item + 3]]);
            return Some(format!("{name}: {array}[{item}] is {:#010x}, the reference {:#010x}", word(g), word(w)));
        }
    }
    None
}

/// Where `kernel` gives other bits on `device` than its reference (None: nowhere) with the
/// tiles it declined, or why it did not run.
fn mismatch(
    kernel: &kg::Kernel,
    inputs: &eval::Inputs,
    name: &str,
    device: &DeviceHandle,
) -> Result<(Option<String>, usize), String> {
    let desc = Arc::new(desc(kernel.wgsl()));
    let want = reference(kernel, inputs);
    let (o, g, declined) = on_device(device, &desc, inputs, kernel).map_err(|e| format!("{name}: {e}"))?;
    Ok((first_difference(name, &want, &(o, g)), declined))
}

#[test]
fn generated_kernels_give_the_same_bits_everywhere() {
    let count: u64 = std::env::var("XCD_DIFF_KERNELS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let first: u64 = std::env::var("XCD_DIFF_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let ptxas = xcd_ptxsim::ptxas::required();
    // The interpreter, then every device of this machine: llvmpipe here and in CI; on a GPU
    // machine (scripts/gpu-check) the real CUDA device and, where XCD_NVIDIA_VULKAN says the
    // machine has its Vulkan driver, the same GPU through Vulkan.
    let mut handles = vec![xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()))];
    // llvmpipe compiles a kernel at its first dispatch, inside the first tile's deadline: a
    // generated kernel that inlines the math library in many places (four copies of `pow`, eight
    // of `atan2`) takes it close to a minute on 2 cores. This test is about bits, so its tiles get
    // ten minutes; the deadline's own behaviour is tests/deadline.rs's in xcd.
    let options = xcd_engine::Options { tile_deadline: std::time::Duration::from_secs(600), ..Default::default() };
    handles.extend(xcd_engine::discover_with(options).devices);
    if std::env::var_os("XCD_NVIDIA_VULKAN").is_some() {
        let options = xcd_engine::Options { cuda: false, ..xcd_engine::Options::default() };
        handles.extend(
            xcd_engine::discover_with(options).devices.into_iter().filter(|d| d.info().id.starts_with("vulkan:NVIDIA")),
        );
    }
    if !handles.iter().any(|d| d.info().id.starts_with("vulkan:")) {
        assert!(std::env::var_os("CI").is_none(), "CI installs llvmpipe: the Vulkan side must run there");
        eprintln!("skipped the Vulkan side: no Vulkan device here");
    }
    let names: Vec<String> = handles.iter().map(|d| d.info().id.clone()).collect();
    let devices: Vec<(&str, &DeviceHandle)> = names.iter().map(String::as_str).zip(handles.iter()).collect();
    let mut failures = Vec::new();
    let mut first_failure = None;
    let mut declined_tiles = std::collections::BTreeMap::new();
    let mut library_calls = 0;
    for seed in first..first + count {
        let kernel = kg::generate(seed);
        let inputs = kg::inputs(seed, ITEMS);
        library_calls += [
            "exp(",
            "exp2(",
            "log(",
            "log2(",
            "sin(",
            "cos(",
            "tan(",
            "asin(",
            "acos(",
            "atan(",
            "atan2(",
            "inverseSqrt(",
            "degrees(",
            "radians(",
            "ldexp(",
            "fma(",
            "pow(",
        ]
        .iter()
        .map(|f| kernel.wgsl().matches(f).count())
        .sum::<usize>();
        if let Some(ptxas) = &ptxas {
            let ptx = xcd_forms::Kernel::from_wgsl(&kernel.wgsl(), "k").and_then(|k| k.ptx());
            match ptx {
                Ok(ptx) => {
                    if let Err(e) = xcd_ptxsim::ptxas::check(ptxas, &ptx, &format!("diff{seed}")) {
                        failures.push(format!("seed {seed}: {e}"));
                    }
                }
                Err(e) => failures.push(format!("seed {seed}: no PTX: {e}")),
            }
        }
        for (name, device) in &devices {
            match mismatch(&kernel, &inputs, name, device) {
                Ok((None, declined)) => {
                    *declined_tiles.entry(*name).or_insert(0) += declined;
                    if declined > 0 && std::env::var_os("XCD_DIFF_VERBOSE").is_some() {
                        eprintln!("seed {seed} (subnormals {}): {declined} declined", kg::with_subnormals(seed));
                    }
                }
                Ok((Some(diff), _)) => {
                    failures.push(format!("seed {seed}: {diff}"));
                    first_failure.get_or_insert((seed, kernel.clone(), inputs.clone(), *name, *device));
                }
                Err(e) => failures.push(format!("seed {seed}: {e}")),
            }
        }
    }
    eprintln!(
        "differential: {count} kernels from seed {first} ({} tiles each, {library_calls} calls of the math library), {} mismatches; tiles declined as inexact: {declined_tiles:?}",
        TILES.len(),
        failures.len()
    );
    assert!(count < 20 || library_calls > 0, "the random kernels no longer call the math library");
    let mut report = failures.join("\n");
    if let Some((seed, kernel, inputs, name, device)) = first_failure {
        let small = kg::shrink(&kernel, 600, &mut |k| matches!(mismatch(k, &inputs, name, device), Ok((Some(_), _))));
        let why = mismatch(&small, &inputs, name, device).ok().and_then(|(d, _)| d).unwrap_or_default();
        report.push_str(&format!("\n\nseed {seed} shrunk ({why}):\n{}", small.wgsl()));
    }
    assert!(failures.is_empty(), "generated kernels differ:\n{report}");
}
