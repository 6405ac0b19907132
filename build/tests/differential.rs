//! The generated CPU form against the reference: random kernels (xcd_ptxsim::kernelgen, the
//! same the GPU forms are checked with in sim/tests/differential.rs) are made into blocks by
//! xcd-build in a crate of their own, and each tile of their CPU form must give the reference
//! evaluation's bits: NaNs, infinities, signed zeros, subnormals, wrapping and WGSL's integer
//! division included.
//!
//! `XCD_DIFF_CPU_KERNELS` sets how many kernels (default 40), `XCD_DIFF_SEED` the first seed.
//! The crate builds into this workspace's target directory, sharing its dependencies.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use xcd_ptxsim::kernelgen::{self as kg, eval};

/// Items per run, and the tiles they run in: as sim/tests/differential.rs.
const ITEMS: usize = 300;
const TILES: [(u32, u32); 4] = [(0, 97), (97, 1), (98, 64), (162, 138)];

fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.ancestors().nth(3).expect("target/<profile>/deps/<test>").to_owned()
}

/// A kernel of the random kernels' interface whose continuing block reads a `let` of its loop's
/// body, which a `continue` leaves: the CPU form must declare it before the body.
const CORNER: &str = r#"struct Tile { start: u32, count: u32, first: u32, p0: u32, p1: i32, p2: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> a: array<u32>;
@group(0) @binding(2) var<storage, read> b: array<f32>;
@group(0) @binding(3) var<storage, read> w: array<i32>;
@group(0) @binding(4) var<storage, read_write> o: array<u32>;
@group(0) @binding(5) var<storage, read_write> g: array<f32>;

@compute @workgroup_size(64)
fn corner(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    var acc = 0u;
    var k = 0u;
    loop {
        let step = (a[i] + k) % 3u;
        if (step == 0u) {
            k = k + 1u;
            continue;
        }
        acc = acc + step * k;
        continuing {
            k = k + step;
            break if k >= tile.p0 % 50u;
        }
    }
    o[i] = acc;
    g[i] = f32(k);
}
"#;

/// [`CORNER`] in plain Rust, for one item.
fn corner(a: u32, n: u32) -> (u32, f32) {
    let (mut acc, mut k) = (0u32, 0u32);
    loop {
        let step = a.wrapping_add(k) % 3;
        if step == 0 {
            k = k.wrapping_add(1);
        } else {
            acc = acc.wrapping_add(step.wrapping_mul(k));
        }
        k = k.wrapping_add(step);
        if k >= n % 50 {
            return (acc, k as f32);
        }
    }
}

/// The crate: one block per kernel (and [`CORNER`], run as seed 0), and a main that runs kernel N's tiles on the inputs in a
/// file and writes o and g.
fn write_crate(dir: &Path, seeds: &[u64]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("the checkout");
    let manifest = format!(
        "[package]\nname = \"cpu-diff\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nxcd-runtime = {{ path = {:?} }}\n\n[build-dependencies]\nxcd-build = {{ path = {:?} }}\n",
        root.join("runtime"),
        root.join("build")
    );
    std::fs::create_dir_all(dir.join("src")).expect("src");
    std::fs::create_dir_all(dir.join("wgsl")).expect("wgsl");
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("Cargo.toml");
    let mut build = String::from("fn main() {\n    xcd_build::Builder::new()\n");
    let mut table = String::new();
    for seed in seeds {
        let name = format!("k{seed}");
        let wgsl = kg::generate(*seed).wgsl().replace("fn k(@builtin", &format!("fn {name}(@builtin"));
        std::fs::write(dir.join("wgsl").join(format!("{name}.wgsl")), wgsl).expect("kernel");
        let _ = writeln!(build, "        .file(\"wgsl/{name}.wgsl\").whole(\"{name}\", \"w\")");
        let _ = writeln!(table, "        {seed} => {name}::cpu,");
    }
    std::fs::write(dir.join("wgsl/corner.wgsl"), CORNER).expect("kernel");
    build.push_str("        .file(\"wgsl/corner.wgsl\").whole(\"corner\", \"w\")\n");
    table.push_str("        0 => corner::cpu,\n");
    build.push_str("        .compile();\n}\n");
    std::fs::write(dir.join("build.rs"), build).expect("build.rs");
    let main = format!(
        r#"use xcd_runtime::{{CpuArg, CpuTile}};
use xcd_runtime::wire::Tile;

xcd_runtime::include_blocks!();

const TILES: [(u32, u32); 4] = {TILES:?};

fn words(bytes: &[u8]) -> Vec<u32> {{
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}}

fn main() {{
    let args: Vec<String> = std::env::args().collect();
    let seed: u64 = args[1].parse().expect("a seed");
    let cpu: fn(&mut CpuTile<'_>) = match seed {{
{table}        _ => panic!("no kernel {{seed}}"),
    }};
    let input = words(&std::fs::read(&args[2]).expect("inputs"));
    let (p, rest) = input.split_at(3);
    let (a, rest) = rest.split_at({ITEMS});
    let (b, rest) = rest.split_at({ITEMS});
    let w: Vec<u8> = rest[1..].iter().flat_map(|x| x.to_le_bytes()).collect();
    let (mut o, mut g) = (Vec::new(), Vec::new());
    for (start, count) in TILES {{
        let range = start as usize..(start + count) as usize;
        let a: Vec<u8> = a[range.clone()].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b: Vec<u8> = b[range].iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut to = vec![0u8; 4 * count as usize];
        let mut tg = vec![0u8; 4 * count as usize];
        let arrays = vec![CpuArg::Read(&a), CpuArg::Read(&b), CpuArg::Read(&w), CpuArg::Write(&mut to), CpuArg::Write(&mut tg)];
        cpu(&mut CpuTile::new(Tile {{ start, count }}, p, arrays));
        o.extend(to);
        g.extend(tg);
    }}
    o.extend(g);
    std::fs::write(&args[3], o).expect("outputs");
}}
"#
    );
    std::fs::write(dir.join("src/main.rs"), main).expect("main.rs");
}

fn bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Runs kernel `seed` (0: [`CORNER`]) of the crate's binary on `inputs`; o then g, as bytes.
fn run_kernel(bin: &Path, dir: &Path, seed: u64, inputs: &eval::Inputs) -> Vec<u8> {
    let mut file = inputs.p.to_vec();
    file.extend(&inputs.a);
    file.extend(&inputs.b);
    file.push(inputs.w.len() as u32);
    file.extend(inputs.w.iter().map(|&x| x as u32));
    let (input, output) = (dir.join("in.bin"), dir.join("out.bin"));
    std::fs::write(&input, bytes(&file)).expect("inputs");
    let run = Command::new(bin).arg(seed.to_string()).arg(&input).arg(&output).output().expect("the kernel runs");
    assert!(run.status.success(), "kernel {seed}: {}", String::from_utf8_lossy(&run.stderr));
    std::fs::read(&output).expect("outputs")
}

#[test]
fn generated_cpu_forms_give_the_reference_bits() {
    let count: u64 = std::env::var("XCD_DIFF_CPU_KERNELS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let first: u64 = std::env::var("XCD_DIFF_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let seeds: Vec<u64> = (first..first + count).collect();
    let dir = tempfile::tempdir().expect("temp dir");
    write_crate(dir.path(), &seeds);
    let target = target_dir();
    let out = Command::new(env!("CARGO"))
        .args(["build", "--quiet"])
        .current_dir(dir.path())
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "the kernels' crate builds: {}", String::from_utf8_lossy(&out.stderr));
    let bin = target.join("debug").join("cpu-diff");
    let mut failures = Vec::new();
    for &seed in &seeds {
        let kernel = kg::generate(seed);
        let inputs: eval::Inputs = kg::inputs(seed, ITEMS);
        let got = run_kernel(&bin, dir.path(), seed, &inputs);
        let (mut o, mut g) = (Vec::new(), Vec::new());
        for (start, count) in TILES {
            let (to, tg) = eval::run(&kernel, &inputs, start as usize, count);
            o.extend(to);
            g.extend(tg);
        }
        o.extend(g);
        let want = bytes(&o);
        if let Some(item) = (0..want.len() / 4).find(|&i| want[4 * i..4 * i + 4] != got[4 * i..4 * i + 4]) {
            let word = |v: &[u8]| u32::from_le_bytes([v[4 * item], v[4 * item + 1], v[4 * item + 2], v[4 * item + 3]]);
            let (array, at) = if item < ITEMS { ("o", item) } else { ("g", item - ITEMS) };
            failures.push(format!(
                "seed {seed}: {array}[{at}] is {:#010x}, the reference {:#010x}",
                word(&got),
                word(&want)
            ));
        }
    }
    let inputs = kg::inputs(7, ITEMS);
    let got = run_kernel(&bin, dir.path(), 0, &inputs);
    let (o, g): (Vec<u32>, Vec<u32>) =
        inputs.a.iter().map(|&a| corner(a, inputs.p[0])).map(|(o, g)| (o, g.to_bits())).unzip();
    assert_eq!(got, bytes(&[o, g].concat()), "the continuing block's reads of the body's let");
    eprintln!("cpu differential: {count} kernels from seed {first}, {} mismatches", failures.len());
    assert!(failures.is_empty(), "generated CPU forms differ from the reference:\n{}", failures.join("\n"));
}
