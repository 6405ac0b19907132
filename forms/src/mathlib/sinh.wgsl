// sinh(x) and cosh(x), correctly rounded (round to nearest, ties to even) for every f32 x:
// proven on all 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math
// functions").
//
// For |x| = a from 1/2 up (and cosh's from 2^-12), e^a = 2^e y with y in double-f32 (exp.wgsl's
// reduction and `xcm_exp_df`), so cosh(a) and sinh(a) are 2^(e-1) (y + 2^-2e / y) and
// 2^(e-1) (y - 2^-2e / y), the second term (a double-f32 quotient, `xcm_df_div`) left out from
// e = 31 up, where it is below 2^-60 of the first; the sum rounded once, then scaled exactly.
// Below 1/2, sinh is its Taylor series (`xcm_sinh_series`), with no cancellation. About 2^-46
// of precision in all; the arguments where that is not enough to round right (found by the
// proof) are answered from a list. No intermediate value is subnormal unless the argument is.

fn xcm_sinh(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    let sign = bits & 0x80000000u;
    if (a > 0x7f800000u) {
        return x;
    }
    // |x| < 2^-12: sinh(x) = x + x^3/6 + ... is within x^2/6 < 2^-26 x of x: it rounds to x.
    if (a < 0x39800000u) {
        return x;
    }
    // sinh(x) and cosh(x) round to infinity from 0x42b2d4fd (89.41599...) up.
    if (a >= 0x42b2d4fdu) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    // Where about 2^-46 is not enough to round right (the proof's list; exp's too).
    if (a == 0x4288942bu) {
        return bitcast<f32>(sign | 0x7037a4c5u);
    }
    var s: f32;
    if (a < 0x3f000000u) {
        let v = bitcast<f32>(a);
        s = xcm_round_sum(v, xcm_sinh_series(v));
    } else {
        s = xcm_cosh_sinh(bitcast<f32>(a), -1.0);
    }
    return bitcast<f32>(bitcast<u32>(s) | sign);
}

fn xcm_cosh(x: f32) -> f32 {
    let a = bitcast<u32>(x) & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return x;
    }
    // |x| < 2^-12: cosh(x) = 1 + x^2/2 + ... is within 2^-25 of 1: it rounds to 1.
    if (a < 0x39800000u) {
        return 1.0;
    }
    if (a >= 0x42b2d4fdu) {
        return bitcast<f32>(0x7f800000u);
    }
    // Where about 2^-46 is not enough to round right (the proof's list).
    switch a {
        case 0x3d609528u: { return bitcast<f32>(0x3f803145u); }
        case 0x4142a7c2u: { return bitcast<f32>(0x47bba1e5u); }
        case 0x4288942bu: { return bitcast<f32>(0x7037a4c5u); }
        default: {}
    }
    return xcm_cosh_sinh(bitcast<f32>(a), 1.0);
}

// (e^a + sign e^-a) / 2 for a in [2^-12, 89.416), sign 1 or -1 (then a >= 1/2), rounded once.
fn xcm_cosh_sinh(a: f32, sign: f32) -> f32 {
    let kr = xcm_exp_reduce(a);
    let k = i32(kr.x);
    let y = xcm_exp_df(k, kr.yz);
    let e = k >> 3u;
    var s = y;
    if (e <= 30) {
        let z = xcm_df_div(vec2<f32>(xcm_pow2(-2 * e), 0.0), y);
        s = xcm_df_add(y, vec2<f32>(sign * z.x, sign * z.y));
    }
    // 2^(e - 1) (s.x + s.y): rounded once, then scaled in two exact steps (e - 1 reaches 128,
    // where the rounded sum is at least 1 and the product overflows as it should).
    let h = e - 1;
    let h1 = h >> 1u;
    return (s.x + s.y) * xcm_pow2(h1) * xcm_pow2(h - h1);
}

// sinh(a) - a in double-f32 for a in [2^-12, 1/2]: a v Q(v) with v = a^2 (exact, a two-product)
// and Q(v) = 1/3! + v/5! + ... + v^5/13! (the next term is below 2^-54 of a); Q's three highest
// terms in f32 (each below 2^-21 of Q), the rest by Horner's scheme in double-f32.
fn xcm_sinh_series(a: f32) -> vec2<f32> {
    let v = xcm_two_prod(a, a);
    let tail = bitcast<f32>(0x3638ef1du) + v.x * (bitcast<f32>(0x32d7322bu) + v.x * bitcast<f32>(0x2f309231u));
    var q = xcm_df_step(vec2<f32>(bitcast<f32>(0x39500d01u), bitcast<f32>(0xac3fcbfdu)), v, vec2<f32>(tail, 0.0));
    q = xcm_df_step(vec2<f32>(bitcast<f32>(0x3c088889u), bitcast<f32>(0xafeeeeefu)), v, q);
    q = xcm_df_step(vec2<f32>(bitcast<f32>(0x3e2aaaabu), bitcast<f32>(0xb1aaaaabu)), v, q);
    return xcm_df_mul(vec2<f32>(a, 0.0), xcm_df_mul(v, q));
}
