// exp(x), correctly rounded (round to nearest, ties to even) for every f32 x: proven on all
// 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math functions").
//
// x = k ln2/8 + r with |r| <= ln2/16, so exp(x) = 2^(k/8) * exp(r) (`xcm_exp_scaled`), with r
// in double-f32 from ln2/8 split into three 13-bit parts (each k * part exact, k has at most
// 11 bits) and a fourth rounded one: about 2^-60 absolute error. The few arguments where
// double-f32 is not precise enough to round right (found by the proof) are answered from a
// list.
// No intermediate value is subnormal unless the result is, so llvmpipe (which flushes them)
// declines a tile only where the argument or the result is subnormal.
fn xcm_exp(x: f32) -> f32 {
    if (x != x) {
        return x;
    }
    // exp(x) rounds to infinity from 88.72283935546875 (0x42b17218) up, and to 0 from
    // -103.97208404541016 (0xc2cff1b5) down.
    if (x >= bitcast<f32>(0x42b17218u)) {
        return bitcast<f32>(0x7f800000u);
    }
    if (x <= bitcast<f32>(0xc2cff1b5u)) {
        return 0.0;
    }
    // |x| < 2^-25: exp(x) is 1 after rounding.
    if (abs(x) < bitcast<f32>(0x33000000u)) {
        return 1.0;
    }
    switch bitcast<u32>(x) {
        case 0x33800000u: { return bitcast<f32>(0x3f800001u); }
        case 0x383a3ef1u: { return bitcast<f32>(0x3f800175u); }
        case 0x39c6be5bu: { return bitcast<f32>(0x3f800c6du); }
        case 0x39e5bb1du: { return bitcast<f32>(0x3f800e5du); }
        case 0x3c608a0eu: { return bitcast<f32>(0x3f81c42bu); }
        case 0x3caffe2eu: { return bitcast<f32>(0x3f82c797u); }
        case 0x40315b33u: { return bitcast<f32>(0x417fa47du); }
        case 0x4034d02bu: { return bitcast<f32>(0x4186ea51u); }
        case 0x4178966eu: { return bitcast<f32>(0x4aaaa231u); }
        case 0x4288942bu: { return bitcast<f32>(0x70b7a4c5u); }
        case 0xbae0e25cu: { return bitcast<f32>(0x3f7f8fa7u); }
        case 0xbbf0edf1u: { return bitcast<f32>(0x3f7e1fe9u); }
        case 0xc13d6631u: { return bitcast<f32>(0x36f28e33u); }
        case 0xc16912cdu: { return bitcast<f32>(0x34fd331bu); }
        default: {}
    }
    let kr = xcm_exp_reduce(x);
    return xcm_exp_scaled(i32(kr.x), kr.yz);
}

// (k, r) with x = k ln2/8 + r, k = round(x * 8/ln2) and r in double-f32 (|r| <= ln2/16), for
// |x| below 2^7 (k of at most 11 bits).
fn xcm_exp_reduce(x: f32) -> vec3<f32> {
    let kf = round(x * bitcast<f32>(0x4138aa3bu));
    // r = x - k ln2/8, the first step exact (Sterbenz).
    let r1 = x - kf * bitcast<f32>(0x3db17000u);
    let a = xcm_two_sum(r1, -(kf * bitcast<f32>(0x36860000u)));
    let b = xcm_two_sum(a.x, -(kf * bitcast<f32>(0xaf82e000u)));
    let r = xcm_fast_two_sum(b.x, (a.y + b.y) - kf * bitcast<f32>(0xa8c21951u));
    return vec3<f32>(kf, r.x, r.y);
}

// 2^(k/8) * exp(r) for |r| <= ln2/16 (r in double-f32), correctly rounded but for the
// arguments whose exact value lies within about 2^-47 of a midpoint (their callers list them):
// 2^((k&7)/8) exp(r) in double-f32 (`xcm_exp_df`), rounded once, then 2^(k>>3) applied in two
// exact steps, or for a subnormal result the value rounded once, at its own precision (never
// twice).
fn xcm_exp_scaled(k: i32, r: vec2<f32>) -> f32 {
    let y = xcm_exp_df(k, r);
    let e = k >> 3u;
    if (e <= -126) {
        // A subnormal (or the smallest normal) result: y * 2^(e + 149) is below 2^24, and
        // its nearest integer n gives the result n * 2^-149 with one rounding.
        let s = xcm_pow2(e + 149);
        let v = vec2<f32>(y.x * s, y.y * s);
        var n = round(v.x);
        let d = (v.x - n) + v.y;
        if (d > 0.5) {
            n = n + 1.0;
        } else if (d < -0.5) {
            n = n - 1.0;
        }
        return n * xcm_pow2(-75) * xcm_pow2(-74);
    }
    // In two steps, as 2^128 is not an f32 (e reaches 128 just below the overflow).
    let e1 = e >> 1u;
    return (y.x + y.y) * xcm_pow2(e1) * xcm_pow2(e - e1);
}

// 2^((k&7)/8) * exp(r) in double-f32 (in [0.95, 1.97)) for |r| <= ln2/16, to about 2^-47:
// - exp(r) as its Taylor polynomial to r^8 (the r^9 term is below 2^-59), r^6..r^8 in f32 and
//   the rest by Horner's scheme in double-f32;
// - 2^(j/8) from a table of double-f32 values.
fn xcm_exp_df(k: i32, r: vec2<f32>) -> vec2<f32> {
    // exp(r): 1/6! + r/7! + r^2/8! in f32, then Horner's scheme in double-f32 down to 1.
    let tail = bitcast<f32>(0x3ab60b61u) + r.x * (bitcast<f32>(0x39500d01u) + r.x * bitcast<f32>(0x37d00d01u));
    var p = xcm_df_step(vec2<f32>(bitcast<f32>(0x3c088889u), bitcast<f32>(0xafeeeeefu)), r, vec2<f32>(tail, 0.0));
    p = xcm_df_step(vec2<f32>(bitcast<f32>(0x3d2aaaabu), bitcast<f32>(0xb0aaaaabu)), r, p);
    p = xcm_df_step(vec2<f32>(bitcast<f32>(0x3e2aaaabu), bitcast<f32>(0xb1aaaaabu)), r, p);
    p = xcm_df_step(vec2<f32>(0.5, 0.0), r, p);
    p = xcm_df_step(vec2<f32>(1.0, 0.0), r, p);
    p = xcm_df_step(vec2<f32>(1.0, 0.0), r, p);
    // 2^(j/8), rounded to double-f32.
    var table = array<vec2<f32>, 8>(
        vec2<f32>(1.0, 0.0),
        vec2<f32>(bitcast<f32>(0x3f8b95c2u), bitcast<f32>(0xb260aba1u)),
        vec2<f32>(bitcast<f32>(0x3f9837f0u), bitcast<f32>(0x33231b71u)),
        vec2<f32>(bitcast<f32>(0x3fa5fed7u), bitcast<f32>(0xb32c9d5eu)),
        vec2<f32>(bitcast<f32>(0x3fb504f3u), bitcast<f32>(0x32cfe77au)),
        vec2<f32>(bitcast<f32>(0x3fc5672au), bitcast<f32>(0x320aa837u)),
        vec2<f32>(bitcast<f32>(0x3fd744fdu), bitcast<f32>(0xb2d4a58au)),
        vec2<f32>(bitcast<f32>(0x3feac0c7u), bitcast<f32>(0xb24116deu)),
    );
    return xcm_df_mul(table[k & 7], p);
}
