// inverseSqrt(x) = 1/sqrt(x), correctly rounded for every f32 x: proven on all 2^32 arguments
// by scripts/math-proof against CORE-MATH's rsqrtf (docs/kernels.md, "Math functions").
//
// x = M 2^(E - 23) with E even and M an integer in [2^23, 2^25), so 1/sqrt(x) = T 2^(-24 - E/2)
// for T = sqrt(2^71 / M) in (2^23, 2^24]. The result's significand is the integer nearest T
// (never halfway: that would need M (2Y + 1)^2 = 2^73 with 2Y + 1 odd and above 1), which the
// comparisons of `xcm_rsqrt_above` decide exactly: Y is the one with
// M (2Y - 1)^2 < 2^73 < M (2Y + 1)^2. A float guess starts the search, so a device whose sqrt
// or division is a few units off (Vulkan allows it) still ends on the same Y; the guess's
// float values are normal for every x, and the rest is integer arithmetic.
// Special values as IEEE 754's rSqrt: +-0 give +-inf, +inf gives +0, below zero NaN.
fn xcm_inverse_sqrt(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a == 0u) {
        return bitcast<f32>(bits | 0x7f800000u);
    }
    if (a > 0x7f800000u || bits > 0x80000000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (a == 0x7f800000u) {
        return 0.0;
    }
    // x = m 2^(e - 23), m of 24 bits with its top bit set (a subnormal shifted up).
    var m = a & 0x7fffffu;
    var e = i32(a >> 23u) - 127;
    if (e == -127) {
        let shift = countLeadingZeros(m) - 8u;
        m = m << shift;
        e = -126 - i32(shift);
    } else {
        m = m | 0x800000u;
    }
    // An even exponent: an odd one gives its 2 to M.
    if ((e & 1) != 0) {
        m = m << 1u;
        e = e - 1;
    }
    // The guess: sqrt(2^71 / M) in float, M exact in f32 (it has at most 25 bits, the lowest 0).
    let guess = sqrt(bitcast<f32>(0x63000000u) / f32(m));
    var y = clamp(u32(guess + 0.5), 0x800000u, 0x1000000u);
    for (var i = 0u; i < 8u; i = i + 1u) {
        if (xcm_rsqrt_above(m, 2u * y + 1u)) {
            break;
        }
        y = y + 1u;
    }
    for (var i = 0u; i < 8u; i = i + 1u) {
        if (!xcm_rsqrt_above(m, 2u * y - 1u)) {
            break;
        }
        y = y - 1u;
    }
    // y 2^(-24 - e/2), y in [2^23, 2^24]: y = 2^24 carries into the exponent field.
    return bitcast<f32>((u32(126 - e / 2) << 23u) + (y - 0x800000u));
}

// Whether m s^2 > 2^73, for m below 2^25 and s below 2^26: the product in three words.
fn xcm_rsqrt_above(m: u32, s: u32) -> bool {
    let s2 = xcm_mul32(s, s);
    let low = xcm_mul32(s2.y, m);
    let high = xcm_mul32(s2.x, m);
    let w1 = low.x + high.y;
    let w2 = high.x + u32(w1 < low.x);
    return w2 > 0x200u || (w2 == 0x200u && (w1 | low.y) != 0u);
}
