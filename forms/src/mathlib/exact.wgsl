// The library's exact operations, which round nothing: % on floats, frexp and modf.
//
// x % y on floats: WGSL defines it as x - y trunc(x / y), whose exact value is C's fmod(x, y),
// always an f32 itself (IEEE 754 and C's Annex F: exact, the sign of x). So the correctly
// rounded % is fmod, computed here exactly in integers (checked against the platform's fmodf
// on random pairs and every special case: docs/kernels.md, "Math functions").
//
// |x| = mx 2^(ex - 23), |y| = my 2^(ey - 23) with 24-bit significands: the remainder of mx
// 2^(ex - ey) by my, taken 8 bits of the exponent difference at a time (mx stays below 2^24, so
// its shift below 2^32), then r 2^(ey - 23) with x's sign. At most 35 steps (ex - ey <= 276).
// Special values: NaN where x is infinite or NaN, or y is 0 or NaN; x where y is infinite.
fn xcm_remainder(x: f32, y: f32) -> f32 {
    let bx = bitcast<u32>(x);
    let ax = bx & 0x7fffffffu;
    let ay = bitcast<u32>(y) & 0x7fffffffu;
    if (ax >= 0x7f800000u || ay > 0x7f800000u || ay == 0u) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (ax < ay || ay == 0x7f800000u) {
        return x;
    }
    let sx = xcm_unpack(ax);
    let sy = xcm_unpack(ay);
    let my = u32(sy.x);
    var r = u32(sx.x) % my;
    var d = sx.y - sy.y;
    loop {
        if (d <= 0 || r == 0u) {
            break;
        }
        let s = u32(min(d, 8));
        r = (r << s) % my;
        d = d - i32(s);
    }
    let sign = bx & 0x80000000u;
    if (r == 0u) {
        return bitcast<f32>(sign);
    }
    // r 2^(ey - 23), exact: as a 64-bit significand r << (lz + 32), rounded (not moved) once.
    let lz = countLeadingZeros(r);
    return xcm_round64_any(sign != 0u, vec2<u32>(r << lz, 0u), sy.y - 55 - i32(lz));
}

// frexp(x) as (fract, exp): x = fract 2^exp with |fract| in [0.5, 1) and x's sign, exp as an
// f32 (exact; the exactness pass makes it the i32 WGSL declares). Zero, the infinities and NaN
// give themselves and 0, as C's frexp (NaN as the one NaN). Exact: no rounding anywhere.
fn xcm_frexp(x: f32) -> vec2<f32> {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return vec2<f32>(bitcast<f32>(0x7fc00000u), 0.0);
    }
    if (a == 0u || a == 0x7f800000u) {
        return vec2<f32>(x, 0.0);
    }
    let me = xcm_unpack(a);
    return vec2<f32>(bitcast<f32>((bits & 0x80000000u) | 0x3f000000u | (u32(me.x) & 0x7fffffu)), f32(me.y + 1));
}

// modf(x) as (fract, whole): whole = trunc(x) and fract = x - whole (exact), both with x's sign
// as C's modf gives them (modf(-3.0) is (-0.0, -3.0)); an infinity gives (+-0, itself), NaN
// gives NaN twice.
fn xcm_modf(x: f32) -> vec2<f32> {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    let sign = bits & 0x80000000u;
    if (a > 0x7f800000u) {
        return vec2<f32>(bitcast<f32>(0x7fc00000u), bitcast<f32>(0x7fc00000u));
    }
    if (a == 0x7f800000u) {
        return vec2<f32>(bitcast<f32>(sign), x);
    }
    let whole = trunc(x);
    return vec2<f32>(bitcast<f32>(bitcast<u32>(x - whole) | sign), whole);
}
