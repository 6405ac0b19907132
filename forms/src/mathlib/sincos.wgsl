// sin(x) and cos(x), correctly rounded (round to nearest, ties to even) for every f32 x: proven
// on all 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math
// functions").
//
// All in integer arithmetic, which every device does exactly, and no float operation at all:
// - x = N pi/2 + r, |r| <= pi/4, by Payne and Hanek's method (`xcm_reduce`): x's 24-bit
//   significand times the 128 bits of 2/pi that its exponent selects, so that even 2^127 is
//   reduced with no approximation of pi beyond them (r to about 60 bits); r kept as a 64-bit significand and an exponent (`xcm_fixed_sin_cos` says
//   how).
// - sin(r) = r (1 - u S(u)) and cos(r) = 1 - u C(u), u = r^2, as Taylor polynomials in 64-bit
//   fixed point (to u^9 and u^10: the next terms are below 2^-70);
// - the 64-bit result rounded once (`xcm_round64`). Its relative error is below 2^-58.
// No float value is made on the way, so llvmpipe declines a tile only where the argument is
// subnormal.
// The constants (2/pi's words, pi/2, the series) are printed by `scripts/mathlib-tables sincos`.
fn xcm_sin(x: f32) -> f32 {
    return xcm_sin_cos(x, 0u);
}

fn xcm_cos(x: f32) -> f32 {
    return xcm_sin_cos(x, 1u);
}

// sin(x) (cosine 0) or cos(x) = sin(x + pi/2) (cosine 1): the quadrant moved on by one.
fn xcm_sin_cos(x: f32, cosine: u32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    // |x| < 2^-12: sin(x) = x - x^3/6 rounds to x, cos(x) = 1 - x^2/2 to 1.
    if (a < 0x39800000u) {
        if (cosine == 1u) {
            return 1.0;
        }
        return x;
    }
    let r = xcm_reduce_any(a);
    // r = (r.x, r.y) 2^-(63 + r.z), negative where r.w's bit 2 is set, in quadrant r.w & 3.
    let q = (r.w & 3u) + cosine;
    let z = i32(r.z);
    let rn = vec2<u32>(r.x, r.y);
    let u = xcm_shr64(xcm_mulhi64(rn, rn), u32(2 * z - 2));
    var part: vec3<u32>;
    var negative = (q & 2u) != 0u;
    if ((q & 1u) == 0u) {
        part = xcm_sin_part(rn, z, u);
        negative = negative != ((r.w & 4u) != 0u);
    } else {
        part = xcm_cos_part(u);
    }
    if (cosine == 0u && bits != a) {
        negative = !negative;
    }
    return xcm_round64(negative, part.xy, bitcast<i32>(part.z));
}

// |x| = m 2^e, m of 24 bits, reduced modulo pi/2 (see `xcm_reduce`): |x| itself below pi/4
// (0x3f490fdb, just above it), with quadrant 0.
fn xcm_reduce_any(a: u32) -> vec4<u32> {
    let e = i32(a >> 23u) - 150;
    let m = (a & 0x7fffffu) | 0x800000u;
    if (a >= 0x3f490fdbu) {
        return xcm_reduce(m, e);
    }
    return vec4<u32>(m << 8u, 0u, u32(-e - 23), 0u);
}

// sin(r) for r = rn 2^-(63 + z) >= 0, u = r^2 as `xcm_sin_cos` makes it: (significand with its
// top bit set, its exponent as bits), sin(r) = significand 2^exponent.
fn xcm_sin_part(rn: vec2<u32>, z: i32, u: vec2<u32>) -> vec3<u32> {
    // sin(r) = r - r u S(u), at least 0.89 r: normalized by one bit at most.
    var y = xcm_sub64(rn, xcm_mulhi64(rn, xcm_mulhi64(u, xcm_series(u, 0u))));
    var k = -63 - z;
    if (y.x < 0x80000000u) {
        y = vec2<u32>((y.x << 1u) | (y.y >> 31u), y.y << 1u);
        k = k - 1;
    }
    return vec3<u32>(y.x, y.y, bitcast<u32>(k));
}

// cos(r) for u = r^2, as `xcm_sin_part` gives sin(r).
fn xcm_cos_part(u: vec2<u32>) -> vec3<u32> {
    // cos(r) = 1 - u C(u), u C(u) < 1/2: 2^64 - d as a 64-bit significand, or 1 if d is 0.
    let d = xcm_mulhi64(u, xcm_series(u, 1u));
    // The exponent, -63 or -64, as bits.
    if (d.x == 0u && d.y == 0u) {
        return vec3<u32>(0x80000000u, 0u, 0xffffffc1u);
    }
    var y = xcm_sub64(vec2<u32>(0xffffffffu, 0xffffffffu), d);
    y = vec2<u32>(y.x + u32(y.y == 0xffffffffu), y.y + 1u);
    return vec3<u32>(y.x, y.y, 0xffffffc0u);
}

// x = m 2^e (m of 24 bits, x >= 1/2) reduced modulo pi/2: (r's significand as (high, low)
// word, z, quadrant | 4 if r is negative), r = significand 2^-(63 + z).
//
// x 2/pi = m T 2^-126, with T the 128 bits of 2/pi from bit e - 1 on (bit 1 is the first after
// the point; the bits before it only add multiples of 4 to the product, and the table starts
// with a word of zeros for e < 2): its integer part mod 4 is the quadrant, and its fraction,
// taken to the nearer integer, times pi/2 is r. The bits of 2/pi left out weigh below
// 2^-101; the fraction is never below 2^-29.9 for an f32 x (0x6f79be45; `scripts/mathlib-tables
// hard-reductions` finds the nearest in every binade).
fn xcm_reduce(m: u32, e: i32) -> vec4<u32> {
    var table = array<u32, 9>(
        0u,
        0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
        0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u,
    );
    let o = u32(e + 30);
    let w = o >> 5u;
    let s = o & 31u;
    var t = array<u32, 4>(0u, 0u, 0u, 0u);
    for (var j = 0u; j < 4u; j = j + 1u) {
        t[j] = table[w + j];
        if (s != 0u) {
            t[j] = (table[w + j] << s) | (table[w + j + 1u] >> (32u - s));
        }
    }
    // m T, words 1 (bits 96..127) to 4 of 5; word 0 only adds multiples of 4.
    let p3 = xcm_mul32(m, t[3]);
    let p2 = xcm_mul32(m, t[2]);
    let p1 = xcm_mul32(m, t[1]);
    let p0 = xcm_mul32(m, t[0]);
    let w4 = p3.y;
    let w3 = p3.x + p2.y;
    let c3 = u32(w3 < p2.y);
    let w2a = p2.x + p1.y;
    let w2 = w2a + c3;
    let c2 = u32(w2a < p1.y) + u32(w2 < w2a);
    let w1 = p1.x + p0.y + c2;
    // The binary point is after bit 126: bits 30 and 31 of w1 are N mod 4, the 126 below it
    // the fraction f, here as 128 bits f 2^128.
    var quadrant = w1 >> 30u;
    var f = array<u32, 4>((w1 << 2u) | (w2 >> 30u), (w2 << 2u) | (w3 >> 30u), (w3 << 2u) | (w4 >> 30u), w4 << 2u);
    var negative = 0u;
    if (f[0] >= 0x80000000u) {
        // f >= 1/2: the nearer integer is N + 1, and r is (f - 1) pi/2: 2^128 - f, negated.
        quadrant = quadrant + 1u;
        negative = 4u;
        var carry = 1u;
        for (var j = 3; j >= 0; j = j - 1) {
            let v = ~f[j] + carry;
            carry = u32(carry == 1u && v == 0u);
            f[j] = v;
        }
    }
    // The top 64 bits of f from its first 1: f = g 2^-(64 + z).
    var z = 0u;
    if (f[0] == 0u) {
        f = array<u32, 4>(f[1], f[2], f[3], 0u);
        z = 32u;
    }
    let c = countLeadingZeros(f[0]);
    var g = vec2<u32>(f[0], f[1]);
    if (c != 0u) {
        g = vec2<u32>((f[0] << c) | (f[1] >> (32u - c)), (f[1] << c) | (f[2] >> (32u - c)));
    }
    z = z + c;
    // r = f pi/2, with pi/2 as 0xc90fdaa22168c235 2^-63 (rounded to 64 bits), normalized.
    var h = xcm_mulhi64(g, vec2<u32>(0xc90fdaa2u, 0x2168c235u));
    if (h.x < 0x80000000u) {
        h = vec2<u32>((h.x << 1u) | (h.y >> 31u), h.y << 1u);
        z = z + 1u;
    }
    return vec4<u32>(h.x, h.y, z, (quadrant & 3u) | negative);
}

// S(u) = 1/3! - u/5! + u^2/7! - ... (which 0) or C(u) = 1/2! - u/4! + ... (which 1), to the
// 1/19! or 1/20! term, by Horner's scheme in 64-bit fixed point (every partial sum is
// positive, as each coefficient is more than u times the next).
fn xcm_series(u: vec2<u32>, which: u32) -> vec2<u32> {
    var sine = array<vec2<u32>, 9>(
        vec2<u32>(0x2aaaaaaau, 0xaaaaaaabu),
        vec2<u32>(0x02222222u, 0x22222222u),
        vec2<u32>(0x000d00d0u, 0x0d00d00du),
        vec2<u32>(0x00002e3bu, 0xc74aad8eu),
        vec2<u32>(0x0000006bu, 0x99159fd5u),
        vec2<u32>(0x00000000u, 0xb092309du),
        vec2<u32>(0x00000000u, 0x00d73f9fu),
        vec2<u32>(0x00000000u, 0x0000ca96u),
        vec2<u32>(0x00000000u, 0x00000098u),
    );
    var cosine = array<vec2<u32>, 10>(
        vec2<u32>(0x80000000u, 0x00000000u),
        vec2<u32>(0x0aaaaaaau, 0xaaaaaaabu),
        vec2<u32>(0x005b05b0u, 0x5b05b05bu),
        vec2<u32>(0x0001a01au, 0x01a01a02u),
        vec2<u32>(0x0000049fu, 0x93edde28u),
        vec2<u32>(0x00000008u, 0xf76c77fcu),
        vec2<u32>(0x00000000u, 0x0c9cba54u),
        vec2<u32>(0x00000000u, 0x000d73fau),
        vec2<u32>(0x00000000u, 0x00000b41u),
        vec2<u32>(0x00000000u, 0x00000008u),
    );
    if (which == 0u) {
        var s = sine[8];
        for (var i = 7; i >= 0; i = i - 1) {
            s = xcm_sub64(sine[i], xcm_mulhi64(u, s));
        }
        return s;
    }
    var c = cosine[9];
    for (var i = 8; i >= 0; i = i - 1) {
        c = xcm_sub64(cosine[i], xcm_mulhi64(u, c));
    }
    return c;
}
