// asinh(x), acosh(x) and atanh(x), correctly rounded (round to nearest, ties to even) for every
// f32 x: proven on all 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md,
// "Math functions").
//
// Each is a logarithm of 1 + u (log.wgsl's `xcm_log1p_parts`, which keeps u's relative
// precision near 0) with u in double-f32 written so that nothing cancels:
// - asinh(a) = log(1 + u), u = a + a^2 / (1 + sqrt(1 + a^2));
// - acosh(x) = log(1 + u), u = t + sqrt(t (t + 2)) with t = x - 1 (exact);
// - atanh(a) = log(1 + u) / 2, u = 2a / (1 - a) (1 - a exact in double-f32).
// From 2^28 up, asinh and acosh are log(2x) (the rest is below 2^-58 of it). Quotients and
// square roots in double-f32 (df.wgsl) use IEEE + - * and the library's own correctly rounded
// reciprocal and inverse square root, never the device's division or sqrt. About 2^-46 of
// precision; the arguments where that is not enough to round right (found by the proof) are
// answered from a list. No intermediate value is subnormal unless the argument is.
fn xcm_asinh(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    // NaN, infinities, and |x| < 2^-12: asinh(x) = x - x^3/6 + ... is within x^2/6 < 2^-26 x
    // of x, so it rounds to x.
    if (a >= 0x7f800000u || a < 0x39800000u) {
        return x;
    }
    // Where about 2^-46 is not enough to round right (the proof's list).
    let sign = bits & 0x80000000u;
    switch a {
        case 0x3a5352c8u: { return bitcast<f32>(sign | 0x3a5352c7u); }
        case 0x3c09d03du: { return bitcast<f32>(sign | 0x3c09cfd3u); }
        case 0x3fe1a91fu: { return bitcast<f32>(sign | 0x3faa8959u); }
        case 0x4041409bu: { return bitcast<f32>(sign | 0x3fe98d07u); }
        case 0x4bdd65a5u: { return bitcast<f32>(sign | 0x418f034bu); }
        default: {}
    }
    let v = bitcast<f32>(a);
    var p: vec3<f32>;
    if (a >= 0x4d800000u) {
        p = xcm_log_parts(v);
        p.x = p.x + 1.0;
    } else {
        let v2 = xcm_two_prod(v, v);
        let s = xcm_df_sqrt(xcm_df_add(v2, vec2<f32>(1.0, 0.0)));
        let f = xcm_df_div(v2, xcm_df_add(s, vec2<f32>(1.0, 0.0)));
        p = xcm_log1p_parts(xcm_df_add(vec2<f32>(v, 0.0), f));
    }
    return bitcast<f32>(bitcast<u32>(xcm_log_round(p)) | sign);
}

fn xcm_acosh(x: f32) -> f32 {
    if (x != x) {
        return x;
    }
    if (x < 1.0) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (x == 1.0) {
        return 0.0;
    }
    if (x == bitcast<f32>(0x7f800000u)) {
        return x;
    }
    // Where about 2^-46 is not enough to round right (the proof's list).
    if (bitcast<u32>(x) == 0x4bdd65a5u) {
        return bitcast<f32>(0x418f034au);
    }
    var p: vec3<f32>;
    if (x >= bitcast<f32>(0x4d800000u)) {
        p = xcm_log_parts(x);
        p.x = p.x + 1.0;
    } else {
        let t = xcm_two_sum(x, -1.0);
        let g = xcm_df_sqrt(xcm_df_mul(t, xcm_df_add(t, vec2<f32>(2.0, 0.0))));
        p = xcm_log1p_parts(xcm_df_add(t, g));
    }
    return xcm_log_round(p);
}

fn xcm_atanh(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    let sign = bits & 0x80000000u;
    if (a > 0x7f800000u) {
        return x;
    }
    if (a > 0x3f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (a == 0x3f800000u) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    // |x| < 2^-12: atanh(x) = x + x^3/3 + ... is within x^2/3 < 2^-25 x of x: it rounds to x.
    if (a < 0x39800000u) {
        return x;
    }
    // Where about 2^-46 is not enough to round right (the proof's list).
    switch a {
        case 0x39b89ba2u: { return bitcast<f32>(sign | 0x39b89ba3u); }
        case 0x3b06f2f9u: { return bitcast<f32>(sign | 0x3b06f305u); }
        case 0x3cf75c10u: { return bitcast<f32>(sign | 0x3cf76f52u); }
        case 0x3dcd9576u: { return bitcast<f32>(sign | 0x3dce4751u); }
        default: {}
    }
    let v = bitcast<f32>(a);
    let u = xcm_df_div(vec2<f32>(2.0 * v, 0.0), xcm_two_sum(1.0, -v));
    return bitcast<f32>(bitcast<u32>(0.5 * xcm_log_round(xcm_log1p_parts(u))) | sign);
}
