// degrees(x) = x 180/pi and radians(x) = x pi/180, correctly rounded for every f32 x, subnormal
// and overflowing results included: proven on all 2^32 arguments by scripts/math-proof against
// MPFR's (docs/kernels.md, "Math functions").
//
// In integers alone: x's 24-bit significand times the constant's first 64 bits (an 88-bit
// product in three words), rounded once at the result's place (`xcm_round64_any`). The bits of
// the constant left out move the product by less than 2^24 of its 2^88, far below what any
// f32 x comes to a rounding midpoint (the proof would show it otherwise).
fn xcm_degrees(x: f32) -> f32 {
    // 180/pi = 0xe52ee0d3_1e0fbdc3... 2^(5 - 63) (`scripts/mathlib-tables angle`).
    return xcm_times(x, vec2<u32>(0xe52ee0d3u, 0x1e0fbdc3u), 5);
}

fn xcm_radians(x: f32) -> f32 {
    // pi/180 = 0x8efa3512_94e9c8ae... 2^(-6 - 63).
    return xcm_times(x, vec2<u32>(0x8efa3512u, 0x94e9c8aeu), -6);
}

// x c 2^(ec - 63), c a 64-bit significand with its top bit set, correctly rounded where c's
// bits beyond these 64 cannot change the rounding.
fn xcm_times(x: f32, c: vec2<u32>, ec: i32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (a == 0x7f800000u || a == 0u) {
        return x;
    }
    let me = xcm_unpack(a);
    let m = u32(me.x);
    // P = m c = (w2, w1, w0), in [2^86, 2^88).
    let low = xcm_mul32(m, c.y);
    let high = xcm_mul32(m, c.x);
    let w1 = high.y + low.x;
    let w2 = high.x + u32(w1 < high.y);
    let w0 = low.y;
    // x c 2^(ec-63) = P 2^(e + ec - 86): P's top 64 bits as the significand.
    if (w2 >= 0x800000u) {
        let y = vec2<u32>((w2 << 8u) | (w1 >> 24u), (w1 << 8u) | (w0 >> 24u));
        return xcm_round64_any(bits != a, xcm_sticky(y, w0 << 8u), me.y + ec - 62);
    }
    let y = vec2<u32>((w2 << 9u) | (w1 >> 23u), (w1 << 9u) | (w0 >> 23u));
    return xcm_round64_any(bits != a, xcm_sticky(y, w0 << 9u), me.y + ec - 63);
}

// y with its lowest bit set if `dropped` (bits below it) is not zero: a midpoint of y alone is
// then seen as above it, which rounding needs.
fn xcm_sticky(y: vec2<u32>, dropped: u32) -> vec2<u32> {
    return vec2<u32>(y.x, y.y | u32(dropped != 0u));
}

// x 2^n, correctly rounded: exact unless the result is subnormal or overflows (C's ldexpf).
// WGSL leaves n above 128 to the device; here it is the value as for any other n.
fn xcm_ldexp(x: f32, n: i32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (a == 0x7f800000u || a == 0u) {
        return x;
    }
    let me = xcm_unpack(a);
    // x = (m << 40) 2^(e - 63); n clamped where the result is infinite or zero anyway.
    let k = me.y - 63 + clamp(n, -400, 400);
    return xcm_round64_any(bits != a, vec2<u32>(u32(me.x) << 8u, 0u), k);
}
