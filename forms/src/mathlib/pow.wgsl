// pow(x, y), correctly rounded (round to nearest, ties to even), with C's special values
// (IEEE 754-2019 section 9.2, C's Annex F: a negative x with an integer y included): checked
// against CORE-MATH on 10^9 random pairs and its hardest cases (docs/kernels.md, "Math
// functions").
//
// - Exact and midpoint results are computed exactly, in integers: x = X 2^a with X odd, and
//   x^y can only be exact or halfway between two f32 where X = 1 (a power of 2, with a y an
//   integer) or y = n/2^f with f <= 3, X = K^(2^f) and 2^f dividing a (x^y = K^n 2^(a n/2^f)).
//   Those with K^n below 2^64 are rounded once from the exact value (`xcm_pow_exact`).
// - Every other x^y is 2^T, T = y log2(x) = y e + y log(m)/ln2 (`xcm_log_parts`, with y e
//   exact), in double-f32 to about 2^-39 of the result, finished as exp2's; where that lies
//   within 2^-36 of a midpoint M between two f32 (about 1 result in 2,000), the sign of
//   y ln(x) - ln(M) in 128-bit fixed point says which side x^y is on (`xcm_pow_above`,
//   ln128.wgsl): within 2^-90, and no x^y that is not M lies nearer M than 2^-83 or so
//   (CORE-MATH's search for the worst cases found none past 57 identical bits after the
//   rounding bit).
// No intermediate value is subnormal unless an argument or the result is.
fn xcm_pow(x: f32, y: f32) -> f32 {
    let inf = bitcast<f32>(0x7f800000u);
    if (y == 0.0 || x == 1.0) {
        return 1.0;
    }
    if (x != x) {
        return x;
    }
    if (y != y) {
        return y;
    }
    let ax = abs(x);
    let ay = abs(y);
    if (ay == inf) {
        if (ax == 1.0) {
            return 1.0;
        }
        return select(0.0, inf, (ax > 1.0) == (y > 0.0));
    }
    // y an integer from 2^24 up (and then even), or one it rounds to.
    let integer = ay >= 16777216.0 || round(ay) == ay;
    let odd = ay < 16777216.0 && integer && (u32(ay) & 1u) == 1u;
    // The sign a negative x (-0 and -inf included) gives an odd integer y.
    let negative = (bitcast<u32>(x) >> 31u) == 1u && odd;
    var r: f32;
    if (ax == 0.0) {
        r = select(0.0, inf, y < 0.0);
    } else if (ax == inf) {
        r = select(inf, 0.0, y < 0.0);
    } else if (x < 0.0 && !integer) {
        return bitcast<f32>(0x7fc00000u);
    } else if (ax == 1.0) {
        r = 1.0;
    } else {
        r = xcm_pow_finite(ax, y);
    }
    return select(r, -r, negative);
}

// x^y for x positive, finite and not 1, y finite and not 0.
fn xcm_pow_finite(x: f32, y: f32) -> f32 {
    let inf = bitcast<f32>(0x7f800000u);
    // |y| < 2^-34: |y log2(x)| < 2^-26.7, and x^y rounds to 1.
    if (abs(y) < bitcast<f32>(0x2e800000u)) {
        return 1.0;
    }
    // |y| >= 2^31: |y log2(x)| > 150 for every f32 x but 1.
    if (abs(y) >= 2147483648.0) {
        return select(0.0, inf, (x > 1.0) == (y > 0.0));
    }
    let exact = xcm_pow_exact(x, y);
    if (exact == exact) {
        return exact;
    }
    let p = xcm_log_parts(x);
    // T = y e + y log(m)/ln2: y e exact (24 bits by at most 8), the rest in double-f32.
    let ye = xcm_two_prod(y, p.x);
    let yl0 = xcm_two_prod(y, p.y);
    let yl1 = xcm_fast_two_sum(yl0.x, yl0.y + y * p.z);
    let yl = xcm_df_mul(yl1, vec2<f32>(bitcast<f32>(0x3fb8aa3bu), bitcast<f32>(0x32a57060u)));
    let s = xcm_two_sum(ye.x, yl.x);
    let rest = s.y + (ye.y + yl.y);
    // x^y rounds to infinity from T = 128 on, and to 0 below -150.
    if (s.x >= 129.0) {
        return inf;
    }
    if (s.x <= -152.0) {
        return 0.0;
    }
    // T = k/8 + r, |r| <= 1/16 (the first step exact: Sterbenz), then 2^(k/8) exp(r ln2).
    let kf = round(s.x * 8.0);
    let r = xcm_two_sum(s.x - kf * 0.125, rest);
    let rl = xcm_df_mul(r, vec2<f32>(bitcast<f32>(0x3f317218u), bitcast<f32>(0xb102e308u)));
    return xcm_pow_round(x, y, i32(kf), rl);
}

// 2^(k/8) exp(r) rounded once, as `xcm_exp_scaled` rounds it, for the x^y it approximates to
// within 2^-38 or so: where that approximation lies within 2^-36 of a midpoint M between two
// f32, which side of M x^y is on is decided exactly enough by `xcm_pow_above` (in 1 of some 2,000
// results).
fn xcm_pow_round(x: f32, y: f32, k: i32, r: vec2<f32>) -> f32 {
    let v = xcm_exp_df(k, r);
    let e = k >> 3u;
    let close = bitcast<f32>(0x2d800000u);
    // The result is value 2^sa 2^sb; where x^y is close to the midpoint M = mn 2^ms, value is
    // `below` or `above`, whichever side of M x^y is on.
    var value = v.x;
    var sa = e >> 1u;
    var sb = e - sa;
    var decide = false;
    var below = 0.0;
    var above = 0.0;
    var mn = 0u;
    var ms = 0;
    if (e <= -126) {
        // A subnormal (or the smallest normal) result: v 2^(e + 149) units of 2^-149, rounded
        // to the integer n, or to its neighbour on the far side of the midpoint n +- 1/2.
        let u = vec2<f32>(v.x * xcm_pow2(e + 149), v.y * xcm_pow2(e + 149));
        value = round(u.x);
        let d = (u.x - value) + u.y;
        sa = -75;
        sb = -74;
        // (|d| past 1/2, where rounding moves n, is a case of this too.)
        if (0.5 - abs(d) <= u.x * close) {
            decide = true;
            below = select(value - 1.0, value, d > 0.0);
            above = below + 1.0;
            mn = u32(below) * 2u + 1u;
            ms = -150;
        }
    } else if (v.y != 0.0) {
        // v = hi + lo, |lo| at most half a unit of hi: hi unless lo reaches the midpoint between
        // hi and its neighbour on lo's side.
        let neighbour = bitcast<f32>(bitcast<u32>(v.x) + select(0xffffffffu, 1u, v.y > 0.0));
        if (abs(neighbour - v.x) * 0.5 - abs(v.y) <= v.x * close) {
            decide = true;
            below = min(v.x, neighbour);
            above = max(v.x, neighbour);
            // M = (below + above) / 2: both significands at the smaller exponent of the two.
            let a = xcm_unpack(bitcast<u32>(below));
            let b = xcm_unpack(bitcast<u32>(above));
            mn = u32(a.x) + (u32(b.x) << u32(b.y - a.y));
            ms = a.y - 24 + e;
        }
    }
    if (decide) {
        value = select(below, above, xcm_pow_above(x, y, mn, ms));
    }
    // In two steps, as 2^128 is not an f32 (e reaches 128 just below the overflow).
    return value * xcm_pow2(sa) * xcm_pow2(sb);
}

// x^y rounded once from its exact value where x^y is K^n 2^s with K^n below 2^64: x = 2^a
// with y a an integer, or x = K^(2^f) 2^a, y = n/2^f (0 < n <= 40, f <= 3) with 2^f dividing
// a. Every exact or midpoint result is one of these. NaN for the rest.
fn xcm_pow_exact(x: f32, y: f32) -> f32 {
    let nan = bitcast<f32>(0x7fc00000u);
    let u = xcm_unpack(bitcast<u32>(x));
    let tz = countTrailingZeros(u32(u.x));
    let odd = u32(u.x) >> tz;
    let a = u.y - 23 + i32(tz);
    if (odd == 1u) {
        // x = 2^a: exact where y a is an integer (|a| <= 149, so y a is exact in double-f32).
        let t = xcm_two_prod(y, f32(a));
        if (t.x >= 128.0) {
            return bitcast<f32>(0x7f800000u);
        }
        if (t.x <= -151.0) {
            return 0.0;
        }
        if (round(t.x) != t.x || round(t.y) != t.y) {
            return nan;
        }
        // 2^-150 is halfway between 0 and 2^-149, and 0 is even.
        let n = i32(t.x) + i32(t.y);
        if (n < -149) {
            return 0.0;
        }
        if (n > 127) {
            return bitcast<f32>(0x7f800000u);
        }
        return xcm_pow2(n >> 1u) * xcm_pow2(n - (n >> 1u));
    }
    // y = n/2^f: f the fewest halvings, n at most 40 (3^41 passes 2^64).
    if (y <= 0.0 || y > 40.0) {
        return nan;
    }
    var f = 0u;
    var yn = y;
    while (f < 3u && round(yn) != yn) {
        yn = yn * 2.0;
        f = f + 1u;
    }
    if (round(yn) != yn || (a & ((1 << f) - 1)) != 0) {
        return nan;
    }
    // K = X^(1/2^f), checked exactly (the square root only proposes it).
    var k = odd;
    for (var i = 0u; i < f; i = i + 1u) {
        let root = u32(round(sqrt(f32(k))));
        if (root * root != k) {
            return nan;
        }
        k = root;
    }
    // K^n in 64 bits, NaN where it passes them.
    let n = u32(yn);
    var p = vec2<u32>(0u, k);
    for (var i = 1u; i < n; i = i + 1u) {
        let lo = xcm_mul32(p.y, k);
        let hi = xcm_mul32(p.x, k);
        let top = hi.y + lo.x;
        if (hi.x != 0u || top < hi.y) {
            return nan;
        }
        p = vec2<u32>(top, lo.y);
    }
    // K^n 2^(a n/2^f), with K^n shifted to its top bit.
    let lz = select(32u + countLeadingZeros(p.y), countLeadingZeros(p.x), p.x != 0u);
    return xcm_round64_any(false, xcm_shl64(p, lz), (a >> f) * i32(n) - i32(lz));
}
