// tanh(x), correctly rounded (round to nearest, ties to even) for every f32 x: proven on all
// 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math functions").
//
// For |x| = a from 1/2 up, E = e^2a = 2^e y (exp.wgsl's reduction of 2a, exact, and
// `xcm_exp_df`) and tanh(a) = (E - 1) / (E + 1), in double-f32 (`xcm_df_div`). Below 1/2,
// sinh(a) / cosh(a) from their Taylor series (`xcm_sinh_series`, and cosh's here), with no
// cancellation. About 2^-46 of precision; the arguments where that is not enough to round right
// (found by the proof) are answered from a list. No intermediate value is subnormal unless the
// argument is.
fn xcm_tanh(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    let sign = bits & 0x80000000u;
    if (a > 0x7f800000u) {
        return x;
    }
    // |x| < 2^-13: tanh(x) = x - x^3/3 + ... is within x^2/3 < 2^-27 x of x: it rounds to x
    // (even where x is a power of 2, whose gap below is half the gap above).
    if (a < 0x39000000u) {
        return x;
    }
    // From 0x41102cb4 (9.0109...) up, 1 - tanh(a) is at most 2^-25: it rounds to 1.
    if (a >= 0x41102cb4u) {
        return bitcast<f32>(sign | 0x3f800000u);
    }
    // Where about 2^-46 is not enough to round right (the proof's list).
    switch a {
        case 0x3ac37de2u: { return bitcast<f32>(sign | 0x3ac37dd9u); }
        case 0x3afc9f57u: { return bitcast<f32>(sign | 0x3afc9f43u); }
        case 0x3bc8b605u: { return bitcast<f32>(sign | 0x3bc8b561u); }
        case 0x40a6ef82u: { return bitcast<f32>(sign | 0x3f7ffc25u); }
        default: {}
    }
    let v = bitcast<f32>(a);
    var q: vec2<f32>;
    if (a < 0x3f000000u) {
        let t = xcm_sinh_series(v);
        let s = xcm_two_sum(v, t.x);
        q = xcm_df_div(xcm_fast_two_sum(s.x, s.y + t.y), xcm_cosh_series(v));
    } else {
        let kr = xcm_exp_reduce(2.0 * v);
        let k = i32(kr.x);
        let y = xcm_exp_df(k, kr.yz);
        let scale = xcm_pow2(k >> 3u);
        let big = vec2<f32>(y.x * scale, y.y * scale);
        q = xcm_df_div(xcm_df_add(big, vec2<f32>(-1.0, 0.0)), xcm_df_add(big, vec2<f32>(1.0, 0.0)));
    }
    return bitcast<f32>(bitcast<u32>(q.x + q.y) | sign);
}

// cosh(a) in double-f32 for a in [2^-13, 1/2]: 1 + v R(v) with v = a^2 (exact) and
// R(v) = 1/2! + v/4! + ... + v^5/12! (the next term is below 2^-50); R's three highest terms in
// f32, the rest by Horner's scheme in double-f32.
fn xcm_cosh_series(a: f32) -> vec2<f32> {
    let v = xcm_two_prod(a, a);
    let tail = bitcast<f32>(0x37d00d01u) + v.x * (bitcast<f32>(0x3493f27eu) + v.x * bitcast<f32>(0x310f76c7u));
    var r = xcm_df_step(vec2<f32>(bitcast<f32>(0x3ab60b61u), bitcast<f32>(0xae13e93fu)), v, vec2<f32>(tail, 0.0));
    r = xcm_df_step(vec2<f32>(bitcast<f32>(0x3d2aaaabu), bitcast<f32>(0xb0aaaaabu)), v, r);
    r = xcm_df_step(vec2<f32>(0.5, 0.0), v, r);
    return xcm_df_step(vec2<f32>(1.0, 0.0), v, r);
}
