// 64-bit integer arithmetic in pairs of u32 words (high word, low word), and the rounding of
// a 64-bit significand to f32: what the functions computed in integers share (sin, cos and
// tan, atan and atan2, degrees and radians, ldexp, fma, inverseSqrt). Every device does u32
// arithmetic exactly.

// a * b exactly, as (high word, low word).
fn xcm_mul32(a: u32, b: u32) -> vec2<u32> {
    let a0 = a & 0xffffu;
    let a1 = a >> 16u;
    let b0 = b & 0xffffu;
    let b1 = b >> 16u;
    let p00 = a0 * b0;
    let p01 = a0 * b1;
    let p10 = a1 * b0;
    let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
    return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), (mid << 16u) | (p00 & 0xffffu));
}

// The high 64 bits of the 128-bit product a * b (64-bit values as (high word, low word)).
fn xcm_mulhi64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let hh = xcm_mul32(a.x, b.x);
    let hl = xcm_mul32(a.x, b.y);
    let lh = xcm_mul32(a.y, b.x);
    let ll = xcm_mul32(a.y, b.y);
    let w1a = ll.x + hl.y;
    let w1 = w1a + lh.y;
    let c1 = u32(w1a < ll.x) + u32(w1 < w1a);
    let w2a = hh.y + hl.x;
    let w2b = w2a + lh.x;
    let w2 = w2b + c1;
    let c2 = u32(w2a < hh.y) + u32(w2b < w2a) + u32(w2 < w2b);
    return vec2<u32>(hh.x + c2, w2);
}

// a + b for 64-bit values (the sum below 2^64).
fn xcm_add64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.y + b.y;
    return vec2<u32>(a.x + b.x + u32(lo < b.y), lo);
}

// a - b for 64-bit values (a >= b).
fn xcm_sub64(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return vec2<u32>(a.x - b.x - u32(a.y < b.y), a.y - b.y);
}

// a >> n for a 64-bit value, 0 from n = 64 on.
fn xcm_shr64(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n >= 64u) {
        return vec2<u32>(0u, 0u);
    }
    if (n >= 32u) {
        return vec2<u32>(0u, a.x >> (n - 32u));
    }
    if (n == 0u) {
        return a;
    }
    return vec2<u32>(a.x >> n, (a.y >> n) | (a.x << (32u - n)));
}

// a << n for a 64-bit value (n < 64).
fn xcm_shl64(a: vec2<u32>, n: u32) -> vec2<u32> {
    if (n >= 32u) {
        return vec2<u32>(a.y << (n - 32u), 0u);
    }
    if (n == 0u) {
        return a;
    }
    return vec2<u32>((a.x << n) | (a.y >> (32u - n)), a.y << n);
}

// a / b for 64-bit significands with their top bits set: (q with its top bit set, k as bits),
// a / b = q 2^k, q the quotient truncated to 64 bits with its lowest bit set if any remainder
// is left (jammed, for the rounding that follows: 40 bits below f32's lie between).
fn xcm_div64(a: vec2<u32>, b: vec2<u32>) -> vec3<u32> {
    var rem = a;
    var q = vec2<u32>(0u, 0u);
    var steps = 64u;
    // a / b in [1, 2): its first bit now, 2^-63 for the last; in (1/2, 1): 2^-64.
    var k = -64;
    if (rem.x > b.x || (rem.x == b.x && rem.y >= b.y)) {
        rem = xcm_sub64(rem, b);
        q = vec2<u32>(0u, 1u);
        steps = 63u;
        k = -63;
    }
    for (var i = 0u; i < steps; i = i + 1u) {
        let carry = rem.x >> 31u;
        rem = vec2<u32>((rem.x << 1u) | (rem.y >> 31u), rem.y << 1u);
        q = vec2<u32>((q.x << 1u) | (q.y >> 31u), q.y << 1u);
        if (carry == 1u || rem.x > b.x || (rem.x == b.x && rem.y >= b.y)) {
            rem = vec2<u32>(rem.x - b.x - u32(rem.y < b.y), rem.y - b.y);
            q = vec2<u32>(q.x, q.y | 1u);
        }
    }
    return vec3<u32>(q.x, q.y | u32(rem.x != 0u || rem.y != 0u), bitcast<u32>(k));
}

// y 2^k, y a 64-bit significand with its top bit set, rounded once to the nearest f32 (ties
// to even), negated if `negative`; the result must be normal.
fn xcm_round64(negative: bool, y: vec2<u32>, k: i32) -> f32 {
    let m = y.x >> 8u;
    let rest = y.x & 0xffu;
    let up = rest > 0x80u || (rest == 0x80u && (y.y != 0u || (m & 1u) == 1u));
    // The significand's top bit adds one to the exponent field, and a carry out of the
    // rounding one more.
    var bits = (u32(k + 189) << 23u) + m + u32(up);
    if (negative) {
        bits = bits | 0x80000000u;
    }
    return bitcast<f32>(bits);
}

// y 2^k, y a 64-bit significand with its top bit set, rounded once to f32 (ties to even),
// negated if `negative`, whatever the size: to infinity past f32::MAX, to a subnormal or
// zero below 2^-126 (rounded at its own place, once).
fn xcm_round64_any(negative: bool, y: vec2<u32>, k: i32) -> f32 {
    let sign = select(0u, 0x80000000u, negative);
    // y 2^k lies in [2^(k + 63), 2^(k + 64)): exponent field k + 190.
    if (k >= 65) {
        return bitcast<f32>(sign | 0x7f800000u);
    }
    if (k >= -189) {
        // Normal, or rounding up to infinity past 254 (the carry gives 0x7f800000).
        return xcm_round64(negative, y, k);
    }
    // Subnormal: y 2^(k + 149) units of 2^-149, i.e. y >> n with n = -(k + 149) >= 41; from
    // n = 65 on, y 2^-n < 1/2 rounds to zero.
    let n = -(k + 149);
    if (n >= 65) {
        return bitcast<f32>(sign);
    }
    // t: the result and one more bit (the halfway bit); the rest only says whether it is above.
    let shift = u32(n - 33);
    let t = y.x >> shift;
    let rest = y.y != 0u || (y.x & ((1u << shift) - 1u)) != 0u;
    let r = t >> 1u;
    let up = (t & 1u) == 1u && (rest || (r & 1u) == 1u);
    return bitcast<f32>(sign | (r + u32(up)));
}

// |x| as (m, e): x = m 2^(e - 23) with m of 24 bits, its top bit set (a subnormal shifted up);
// x must be finite and not zero.
fn xcm_unpack(a: u32) -> vec2<i32> {
    let field = i32(a >> 23u);
    if (field == 0) {
        let shift = countLeadingZeros(a) - 8u;
        return vec2<i32>(i32(a << shift), -126 - i32(shift));
    }
    return vec2<i32>(i32((a & 0x7fffffu) | 0x800000u), field - 127);
}
