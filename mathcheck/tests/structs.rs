//! `frexp` and `modf` (whose results are structs) and the builtins WGSL defines by a formula
//! (`smoothstep`, `reflect`, `refract`, `faceForward`), bit for bit against references written
//! apart from the library (musl's frexpf and modff from the `libm` crate; the formulas in Rust's
//! f32, each operation rounded once in WGSL's order), on the CPU form, the PTX interpreter and
//! llvmpipe, on scalars and vectors.

use xcd_engine::DeviceHandle;
use xcd_mathcheck::{formulas_4, random_bits, reference, run_block_cpu, run_block_on, same, split_1, split_4};
use xcd_runtime::Block;

/// `n` f32 of every bit pattern alike (NaN, infinities and subnormals too), the same every run.
fn any_floats(n: usize, seed: u64) -> Vec<f32> {
    let mut next = random_bits(seed);
    (0..n).map(|_| f32::from_bits(next())).collect()
}

/// The edges first: zeros, infinities, NaN, subnormals, integers, halves.
fn split_arguments(n: usize) -> Vec<f32> {
    let mut x: Vec<f32> = [0u32, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0000, 1, 0x807f_ffff, 0x0080_0000]
        .into_iter()
        .map(f32::from_bits)
        .chain([1.0, -1.0, 0.5, -0.5, -3.0, 3.75, -3.75, 8_388_607.5, -16_777_216.0, f32::MAX, f32::MIN])
        .collect();
    x.extend(any_floats(n, 0x5eed));
    x.truncate(x.len() / 4 * 4);
    x
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytemuck::pod_collect_to_vec(bytes)
}

/// The places where `got` differs from `want` (NaN matching NaN), listed.
fn differ(what: &str, x: &[f32], got: &[f32], want: &[f32], per: usize) -> Vec<String> {
    got.iter()
        .zip(want)
        .enumerate()
        .filter(|&(_, (&g, &w))| !same(g, w))
        .take(10)
        .map(|(i, (g, w))| {
            format!(
                "{what} at {} (x {:#010x}): {:#010x}, not {:#010x}",
                i,
                x[i / per].to_bits(),
                g.to_bits(),
                w.to_bits()
            )
        })
        .collect()
}

/// Runs a block on one tile: the block, its items, its inputs' bytes, its outputs' bytes per
/// item; the outputs.
type Runner<'a> = dyn Fn(&Block, usize, &[&[u8]], &[usize]) -> Vec<Vec<u8>> + 'a;

/// Checks `split_1` and `split_4` on `x` where `run` computes them.
fn check_split(x: &[f32], run: &Runner<'_>) {
    let want: Vec<f32> = x.iter().flat_map(|&v| reference::split(v)).collect();
    let out = run(&split_1::block(), x.len(), &[bytemuck::cast_slice(x)], &[16]);
    let bad = differ("split_1", x, &floats(&out[0]), &want, 4);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let out = run(&split_4::block(), x.len() / 4, &[bytemuck::cast_slice(x)], &[16, 16, 16, 16]);
    let exps: Vec<f32> = bytemuck::pod_collect_to_vec::<u8, i32>(&out[1]).into_iter().map(|e| e as f32).collect();
    let fields = [floats(&out[0]), exps, floats(&out[2]), floats(&out[3])];
    for (k, field) in fields.iter().enumerate() {
        let want: Vec<f32> = want.iter().skip(k).step_by(4).copied().collect();
        let bad = differ(&format!("split_4 field {k}"), x, field, &want, 1);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

#[test]
fn frexp_and_modf_give_musl_s_fields_on_the_cpu_form_and_the_ptx_interpreter() {
    let x = split_arguments(100_000);
    check_split(&x, &run_block_cpu);
    let sim = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    check_split(&x, &|block, items, inputs, _| {
        run_block_on(&sim, block, items, inputs).unwrap_or_else(|e| panic!("{e}"))
    });
    if let Some(ptxas) = xcd_ptxsim::ptxas::required() {
        for block in [split_1::block(), split_4::block(), formulas_4::block()] {
            let ptx = block.desc.forms.ptx.clone().expect("xcd-build makes the PTX form");
            xcd_ptxsim::ptxas::check(&ptxas, &ptx, &block.desc.name).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn llvmpipe() -> Option<DeviceHandle> {
    xcd_engine::discover().devices.into_iter().find(|d| d.info().id.starts_with("vulkan:"))
}

#[test]
fn frexp_and_modf_on_llvmpipe_where_nothing_is_subnormal() {
    let Some(device) = llvmpipe() else {
        eprintln!("skipped: no Vulkan device");
        return;
    };
    let x: Vec<f32> = split_arguments(100_000).into_iter().filter(|v| !v.is_subnormal()).collect();
    let x = &x[..x.len() / 4 * 4];
    check_split(x, &|block, items, inputs, _| {
        run_block_on(&device, block, items, inputs).unwrap_or_else(|e| panic!("{e}"))
    });
}

/// `smoothstep`, `reflect`, `refract` (with `c.w` as eta) and `faceForward` of one item's
/// vectors, as WGSL writes them: each operation of f32, rounded once, in order.
fn formulas(a: [f32; 4], b: [f32; 4], c: [f32; 4]) -> [[f32; 4]; 4] {
    let dot = |u: [f32; 4], v: [f32; 4]| u[0] * v[0] + u[1] * v[1] + u[2] * v[2] + u[3] * v[3];
    let clamp01 = |t: f32| {
        let t = if t < 0.0 { 0.0 } else { t };
        if 1.0 < t { 1.0 } else { t }
    };
    let smooth = std::array::from_fn(|i| {
        let t = clamp01((c[i] - a[i]) / (b[i] - a[i]));
        t * t * (3.0 - 2.0 * t)
    });
    let d = dot(b, a);
    let reflected = std::array::from_fn(|i| a[i] - 2.0 * d * b[i]);
    let eta = c[3];
    let k = 1.0 - eta * eta * (1.0 - d * d);
    let refracted = std::array::from_fn(|i| if k < 0.0 { 0.0 } else { eta * a[i] - (eta * d + k.sqrt()) * b[i] });
    let facing = std::array::from_fn(|i| if dot(b, c) < 0.0 { a[i] } else { -a[i] });
    [smooth, reflected, refracted, facing]
}

/// Three arrays of vec4 of values in [-2, 2) (most), every eighth vector with any bits.
fn formula_inputs(n: usize) -> [Vec<f32>; 3] {
    std::array::from_fn(|k| {
        any_floats(4 * n, 0xf00d + k as u64)
            .into_iter()
            .enumerate()
            .map(|(i, v)| if (i / 4) % 8 == 7 { v } else { (v.to_bits() >> 8) as f32 / 4_194_304.0 - 2.0 })
            .collect()
    })
}

fn check_formulas(inputs: &[Vec<f32>; 3], out: &[Vec<u8>], where_: &str) {
    let n = inputs[0].len() / 4;
    let vec4 = |v: &[f32], i: usize| [v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]];
    let got: Vec<Vec<f32>> = out.iter().map(|o| floats(o)).collect();
    let names = ["smoothstep", "reflect", "refract", "faceForward"];
    for i in 0..n {
        let want = formulas(vec4(&inputs[0], i), vec4(&inputs[1], i), vec4(&inputs[2], i));
        for (k, name) in names.iter().enumerate() {
            let g = vec4(&got[k], i);
            assert!(
                g.iter().zip(&want[k]).all(|(&g, &w)| same(g, w)),
                "{where_}: {name} of item {i} ({:?}, {:?}, {:?}) gave {g:?}, not {:?}",
                vec4(&inputs[0], i),
                vec4(&inputs[1], i),
                vec4(&inputs[2], i),
                want[k]
            );
        }
    }
}

#[test]
fn formula_builtins_follow_wgsl_s_formulas_on_every_form() {
    let inputs = formula_inputs(50_000);
    let bytes: Vec<&[u8]> = inputs.iter().map(|v| bytemuck::cast_slice(v.as_slice())).collect();
    let block = formulas_4::block();
    check_formulas(&inputs, &run_block_cpu(&block, 50_000, &bytes, &[16; 4]), "CPU form");
    let sim = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    check_formulas(&inputs, &run_block_on(&sim, &block, 50_000, &bytes).expect("the PTX interpreter"), "PTX");
    let Some(device) = llvmpipe() else {
        eprintln!("skipped llvmpipe: no Vulkan device");
        return;
    };
    // llvmpipe gets the vectors whose values are in [-2, 2): nothing subnormal on the way.
    let tame: [Vec<f32>; 3] = std::array::from_fn(|k| inputs[k].chunks(32).flat_map(|c| c[..28].to_vec()).collect());
    let n = tame[0].len() / 4;
    let bytes: Vec<&[u8]> = tame.iter().map(|v| bytemuck::cast_slice(v.as_slice())).collect();
    check_formulas(&tame, &run_block_on(&device, &block, n, &bytes).expect("llvmpipe"), "llvmpipe");
}
