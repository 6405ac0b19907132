//! The packing builtins and the packed dot products (`pack_4`, `unpack_4`), bit for bit against
//! references written apart from the library: WGSL's formulas in f64 (where `0.5 + s c` is
//! exact enough that its floor is right: s c has at most 40 significant bits, and where it is
//! tiny the floor is 0 either way), Rust's IEEE division in f32, the `half` crate's f16
//! conversions and Rust's integer casts. On the CPU form, the PTX interpreter and llvmpipe.

use xcd_mathcheck::{pack_4, random_bits, run_block_cpu, run_block_on, same, unpack_4};
use xcd_runtime::Block;

/// A xorshift stream of 32-bit words, the same every run.
fn words(n: usize, seed: u64) -> Vec<u32> {
    let mut next = random_bits(seed);
    (0..n).map(|_| next()).collect()
}

/// `n` vec4<f32> (flattened): the edges first (zeros, infinities, NaN, ±1 and just inside,
/// halfway cases of each scale, the f16 range's ends), then values in [-1.25, 1.25) for three
/// vectors in four and any bits for the fourth.
fn floats(n: usize) -> Vec<f32> {
    let mut x: Vec<f32> = [0u32, 0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0000, 0xffc0_1234, 0x7f80_0001, 1]
        .into_iter()
        .map(f32::from_bits)
        .chain([1.0, -1.0, 1.0f32.next_down(), (-1.0f32).next_up(), 0.5 / 127.0, -0.5 / 127.0, 1.5 / 255.0])
        .chain([0.5 / 32767.0, 2.5 / 65535.0, 65504.0, 65519.99, 65520.0, -65520.0, 6.1035156e-5, 5.9604645e-8])
        .chain([2.9802322e-8, 2.9802326e-8, -8.940697e-8, 1e-45, f32::MAX, f32::MIN])
        .collect();
    let random = words(4 * n, 0x9ac4);
    x.extend(
        random
            .iter()
            .enumerate()
            .map(|(i, &w)| if (i / 4) % 4 == 3 { f32::from_bits(w) } else { (w >> 8) as f32 / 6_710_886.4 - 1.25 }),
    );
    x.truncate(4 * n);
    x
}

/// `n` vec4<u32> (flattened): every other vector any bits, the rest small signed values.
fn ints(n: usize) -> Vec<u32> {
    let mut w = vec![0, u32::MAX, 0x7f7f_7f7f, 0x8080_8080, 0x0001_fffe, 0x7fff_8000, 0x7c00_fc00, 0x7e01_7d00];
    let random = words(4 * n, 0x51ab);
    w.extend(random.iter().enumerate().map(|(i, &r)| if (i / 4) % 2 == 0 { r } else { ((r as i32) >> 22) as u32 }));
    w.truncate(4 * n);
    w
}

/// floor(0.5 + s clamp(x, lo, 1)), NaN as 0 (WGSL's snorm and unorm packing).
fn norm(x: f32, s: f64, lo: f64) -> i64 {
    if x.is_nan() { 0 } else { (0.5 + s * f64::from(x).clamp(lo, 1.0)).floor() as i64 }
}

fn bytes4(b: [i64; 4]) -> u32 {
    b.iter().enumerate().map(|(i, &v)| ((v as u32) & 0xff) << (8 * i)).sum()
}

/// x as binary16 bits; NaN as 0x7e00 (every form reads a NaN as 0x7fc00000).
fn half_bits(x: f32) -> u32 {
    if x.is_nan() { 0x7e00 } else { u32::from(half::f16::from_f32(x).to_bits()) }
}

/// What `pack_4` stores for one item: its three vec4<u32>.
fn pack_reference(v: [f32; 4], u: [u32; 4]) -> [u32; 12] {
    let s = u.map(|w| w as i32);
    let snorm = bytes4(v.map(|c| norm(c, 127.0, -1.0)));
    let unorm = bytes4(v.map(|c| norm(c, 255.0, 0.0)));
    let sixteen = |a: i64, b: i64| ((a as u32) & 0xffff) | ((b as u32) << 16);
    let dot_i: i32 =
        (0..4).map(|k| i32::from((u[0] >> (8 * k)) as u8 as i8) * i32::from((u[1] >> (8 * k)) as u8 as i8)).sum();
    let dot_u: u32 = (0..4).map(|k| ((u[2] >> (8 * k)) & 0xff) * ((u[3] >> (8 * k)) & 0xff)).sum();
    [
        snorm,
        unorm,
        sixteen(norm(v[0], 32767.0, -1.0), norm(v[1], 32767.0, -1.0)),
        sixteen(norm(v[2], 65535.0, 0.0), norm(v[3], 65535.0, 0.0)),
        bytes4(s.map(i64::from)),
        bytes4(u.map(i64::from)),
        bytes4(s.map(|c| i64::from(c.clamp(-128, 127)))),
        bytes4(u.map(|c| i64::from(c.min(255)))),
        half_bits(v[0]) | (half_bits(v[1]) << 16),
        half_bits(v[2]) | (half_bits(v[3]) << 16),
        dot_i as u32,
        dot_u,
    ]
}

/// What `unpack_4` stores for one item: five vec4<f32>'s bits and a vec4<u32>, in order.
fn unpack_reference(u: [u32; 4]) -> [[f32; 4]; 4] {
    let byte = |w: u32, k: u32| (w >> (8 * k)) & 0xff;
    let snorm8 = std::array::from_fn(|k| (f32::from(byte(u[0], k as u32) as u8 as i8) / 127.0).max(-1.0));
    let unorm8 = std::array::from_fn(|k| byte(u[1], k as u32) as f32 / 255.0);
    let lo16 = |w: u32| (w & 0xffff) as u16;
    let hi16 = |w: u32| (w >> 16) as u16;
    let snorm16 = |h: u16| (f32::from(h as i16) / 32767.0).max(-1.0);
    let norm16 =
        [snorm16(lo16(u[2])), snorm16(hi16(u[2])), f32::from(lo16(u[3])) / 65535.0, f32::from(hi16(u[3])) / 65535.0];
    let half = |h: u16| half::f16::from_bits(h).to_f32();
    let halves = [half(lo16(u[0])), half(hi16(u[0])), half(lo16(u[1])), half(hi16(u[1]))];
    [snorm8, unorm8, norm16, halves]
}

/// Runs `block` on one tile of `items` items; the outputs.
type Runner<'a> = dyn Fn(&Block, usize, &[&[u8]], &[usize]) -> Vec<Vec<u8>> + 'a;

fn u32s(bytes: &[u8]) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(bytes)
}

/// Checks `pack_4` and `unpack_4` on `x` and `w` (n vec4 each) where `run` computes them.
fn check(x: &[f32], w: &[u32], run: &Runner<'_>, where_: &str) {
    let n = x.len() / 4;
    let vec4 = |i: usize| -> ([f32; 4], [u32; 4]) {
        (std::array::from_fn(|k| x[4 * i + k]), std::array::from_fn(|k| w[4 * i + k]))
    };
    let out = run(&pack_4::block(), n, &[bytemuck::cast_slice(x), bytemuck::cast_slice(w)], &[16; 3]);
    let got: Vec<Vec<u32>> = out.iter().map(|o| u32s(o)).collect();
    let names = ["pack4x8snorm", "pack4x8unorm", "pack2x16snorm", "pack2x16unorm", "pack4xI8", "pack4xU8"];
    let names = names.iter().chain(&["pack4xI8Clamp", "pack4xU8Clamp", "pack2x16float xy", "pack2x16float zw"]);
    let names: Vec<&str> = names.chain(&["dot4I8Packed", "dot4U8Packed"]).copied().collect();
    for i in 0..n {
        let (v, u) = vec4(i);
        let want = pack_reference(v, u);
        for (k, name) in names.iter().enumerate() {
            let g = got[k / 4][4 * i + k % 4];
            assert_eq!(
                g,
                want[k],
                "{where_}: {name} of item {i} ({v:?} {:?}, {u:#010x?}): {g:#010x}, not {:#010x}",
                v.map(f32::to_bits),
                want[k]
            );
        }
    }
    let out = run(&unpack_4::block(), n, &[bytemuck::cast_slice(w)], &[16; 5]);
    let floats: Vec<Vec<f32>> = out[..4].iter().map(|o| bytemuck::pod_collect_to_vec(o)).collect();
    let bytes = u32s(&out[4]);
    let names = ["unpack4x8snorm", "unpack4x8unorm", "unpack2x16snorm and unorm", "unpack2x16float"];
    for i in 0..n {
        let (_, u) = vec4(i);
        let want = unpack_reference(u);
        for (k, name) in names.iter().enumerate() {
            let g: [f32; 4] = std::array::from_fn(|c| floats[k][4 * i + c]);
            assert!(
                g.iter().zip(&want[k]).all(|(&g, &w)| same(g, w)),
                "{where_}: {name} of {u:#010x?}: {g:?}, not {:?}",
                want[k]
            );
        }
        let i8s = [u[2] as u8 as i8, (u[2] >> 24) as u8 as i8].map(|b| i32::from(b) as u32);
        let want = [i8s[0], i8s[1], (u[3] >> 8) & 0xff, (u[3] >> 16) & 0xff];
        assert_eq!(&bytes[4 * i..4 * i + 4], &want, "{where_}: unpack4xI8 and unpack4xU8 of {u:#010x?}");
    }
}

#[test]
fn packing_builtins_give_wgsl_s_values_on_the_cpu_form_and_the_ptx_interpreter() {
    let (x, w) = (floats(50_000), ints(50_000));
    check(&x, &w, &run_block_cpu, "CPU form");
    let sim = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    let on_sim = |block: &Block, items: usize, inputs: &[&[u8]], _: &[usize]| {
        run_block_on(&sim, block, items, inputs).unwrap_or_else(|e| panic!("{e}"))
    };
    check(&x, &w, &on_sim, "PTX interpreter");
    if let Some(ptxas) = xcd_ptxsim::ptxas::required() {
        for block in [pack_4::block(), unpack_4::block()] {
            let ptx = block.desc.forms.ptx.clone().expect("xcd-build makes the PTX form");
            xcd_ptxsim::ptxas::check(&ptxas, &ptx, &block.desc.name).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn packing_builtins_on_llvmpipe_where_no_argument_is_subnormal() {
    let Some(device) = xcd_engine::discover().devices.into_iter().find(|d| d.info().id.starts_with("vulkan:")) else {
        eprintln!("skipped: no Vulkan device");
        return;
    };
    let (x, w) = (floats(50_000), ints(50_000));
    let keep: Vec<usize> =
        (0..x.len() / 4).filter(|&i| !x[4 * i..4 * i + 4].iter().any(|v| v.is_subnormal())).collect();
    let x: Vec<f32> = keep.iter().flat_map(|&i| x[4 * i..4 * i + 4].to_vec()).collect();
    let w: Vec<u32> = keep.iter().flat_map(|&i| w[4 * i..4 * i + 4].to_vec()).collect();
    let on_device = |block: &Block, items: usize, inputs: &[&[u8]], _: &[usize]| {
        run_block_on(&device, block, items, inputs).unwrap_or_else(|e| panic!("{e}"))
    };
    check(&x, &w, &on_device, "llvmpipe");
}
