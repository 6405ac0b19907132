// asin(x) and acos(x), correctly rounded (round to nearest, ties to even) for every f32 x:
// checked against CORE-MATH by scripts/math-proof and mathcheck's tests (docs/kernels.md,
// "Math functions").
//
// As angles (atan.wgsl's `xcm_angle`): asin(x) = atan2(x, s) and acos(x) = atan2(s, x), with
// s = sqrt(1 - x^2). 1 - x^2 is exact in 64 bits wherever it is not within 2^-18 of 1 (x's
// 24-bit significand squared), and truncated to 64 bits there; s is its square root to 64 bits
// (`xcm_sqrt64`). All in integers: llvmpipe declines a tile only where the argument or the
// result is subnormal.
fn xcm_asin(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a > 0x3f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (a == 0x3f800000u) {
        // pi/2, rounded, with x's sign.
        return bitcast<f32>((bits & 0x80000000u) | 0x3fc90fdbu);
    }
    // |x| < 2^-12: asin(x) = x + x^3/6 + ... is within x^2/6 < 2^-26 x of x: it rounds to x.
    if (a < 0x39800000u) {
        return x;
    }
    let u = xcm_unpack(a);
    let s = xcm_sqrt_one_minus_square(u);
    return xcm_angle(bits != a, false, vec2<u32>(u32(u.x) << 8u, 0u), u.y - 63, s.xy, bitcast<i32>(s.z));
}

fn xcm_acos(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a > 0x3f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    // acos(1) = 0, acos(-1) = pi and acos(±0) = pi/2, rounded.
    if (a == 0x3f800000u) {
        return bitcast<f32>(select(0u, 0x40490fdbu, bits != a));
    }
    if (a == 0u) {
        return bitcast<f32>(0x3fc90fdbu);
    }
    let u = xcm_unpack(a);
    let s = xcm_sqrt_one_minus_square(u);
    return xcm_angle(false, bits != a, s.xy, bitcast<i32>(s.z), vec2<u32>(u32(u.x) << 8u, 0u), u.y - 63);
}

// sqrt(1 - x^2) for 0 < |x| < 1, |x| = m 2^(e - 23) as `xcm_unpack` gives it: (significand
// with its top bit set, exponent as bits).
fn xcm_sqrt_one_minus_square(u: vec2<i32>) -> vec3<u32> {
    // x^2 = m^2 2^(2e - 46): in units of 2^-64, m^2 shifted by 2e + 18 (at most 16: e <= -1).
    let m2 = xcm_mul32(u32(u.x), u32(u.x));
    let shift = 2 * u.y + 18;
    var x2: vec2<u32>;
    if (shift >= 0) {
        x2 = xcm_shl64(m2, u32(shift));
    } else {
        x2 = xcm_shr64(m2, u32(min(-shift, 64)));
    }
    if (x2.x == 0u && x2.y == 0u) {
        // x^2 below 2^-64: 1 - x^2 is 1 to 64 bits, and so is its root (2^63 2^-63).
        return vec3<u32>(0x80000000u, 0u, 0xffffffc1u);
    }
    // w = 2^64 - x2 >= 2^41 (|x| <= 1 - 2^-24), normalized by an even shift n, so that
    // 1 - x^2 = w' 2^(-64 - n) with w' in [2^62, 2^64) and its root r 2^(-64 - n/2).
    let w = vec2<u32>(~x2.x + u32(x2.y == 0u), ~x2.y + 1u);
    var n = countLeadingZeros(w.x);
    if (w.x == 0u) {
        n = 32u + countLeadingZeros(w.y);
    }
    n = n & 0xfffffffeu;
    let r = xcm_sqrt64(xcm_shl64(w, n));
    return vec3<u32>(r.x, r.y, bitcast<u32>(-64 - i32(n / 2u)));
}

// floor(sqrt(w 2^64)) for w in [2^62, 2^64): 64 bits, the top one set, digit by digit (two
// bits of the radicand a step; the remainder and the trial need 67 bits: three words).
fn xcm_sqrt64(w: vec2<u32>) -> vec2<u32> {
    var root = vec2<u32>(0u, 0u);
    var rem = vec3<u32>(0u, 0u, 0u);
    for (var i = 0u; i < 64u; i = i + 1u) {
        // The radicand's next two bits: w's, then the zeros of 2^64.
        var two = 0u;
        if (i < 16u) {
            two = (w.x >> (30u - 2u * i)) & 3u;
        } else if (i < 32u) {
            two = (w.y >> (62u - 2u * i)) & 3u;
        }
        rem = vec3<u32>((rem.x << 2u) | (rem.y >> 30u), (rem.y << 2u) | (rem.z >> 30u), (rem.z << 2u) | two);
        // 4 root + 1 against the remainder: the next bit of the root is 1 where it fits.
        let t = vec3<u32>(root.x >> 30u, (root.x << 2u) | (root.y >> 30u), (root.y << 2u) | 1u);
        root = vec2<u32>((root.x << 1u) | (root.y >> 31u), root.y << 1u);
        if (rem.x > t.x || (rem.x == t.x && (rem.y > t.y || (rem.y == t.y && rem.z >= t.z)))) {
            let b0 = u32(rem.z < t.z);
            let b1 = u32(rem.y < t.y || (rem.y == t.y && b0 == 1u));
            rem = vec3<u32>(rem.x - t.x - b1, rem.y - t.y - b0, rem.z - t.z);
            root = vec2<u32>(root.x, root.y | 1u);
        }
    }
    return root;
}
