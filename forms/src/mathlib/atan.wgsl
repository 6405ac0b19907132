// atan(x) and atan2(y, x), correctly rounded (round to nearest, ties to even): checked against
// CORE-MATH by scripts/math-proof and mathcheck's tests, atan2 on every pair of edge values and
// random pairs (docs/kernels.md, "Math functions").
//
// In integer arithmetic, with no float value made on the way (so llvmpipe declines a tile only
// where an argument or the result is subnormal):
// - t = min(|y|, |x|) / max(|y|, |x|) in [0, 1], by long division to 64 bits (`xcm_div64`);
//   atan(x) is atan2(x, 1);
// - atan(t) = atan(c) + atan(d), c = i/16 the nearest sixteenth (for t >= 2^-5), atan(c) from a
//   table of 64-bit values and d = (t - c) / (1 + t c), |d| <= 2^-5, whose atan is
//   d (1 - v A(v)), v = d^2, A's terms to v^6/15 in 64-bit fixed point (the next is below
//   2^-70 of d); for t < 2^-5 the series alone, relative to t, so that tiny and subnormal
//   results keep their precision;
// - the octant put back (pi/2 - a where |y| > |x|, pi - a where x < 0) in 62-bit fixed point,
//   and the result rounded once.
// The constants (the table, the series, pi/2 and pi) are printed by `scripts/mathlib-tables
// atan`.
fn xcm_atan(x: f32) -> f32 {
    // |x| < 2^-12: atan(x) = x - x^3/3 + ... lies within x^3/3 < 2^-25.5 x of x, and less than
    // half a unit below it (below a power of two the units are half as wide: x^2/3 < 2^-25
    // still), so it rounds to x.
    if ((bitcast<u32>(x) & 0x7fffffffu) < 0x39800000u) {
        return x;
    }
    return xcm_atan2(x, 1.0);
}

// atan2(y, x): the angle of (x, y), in [-pi, pi], as IEEE 754 and C's Annex F define it for
// zeros and infinities.
fn xcm_atan2(y: f32, x: f32) -> f32 {
    let yb = bitcast<u32>(y);
    let xb = bitcast<u32>(x);
    let ay = yb & 0x7fffffffu;
    let ax = xb & 0x7fffffffu;
    let sign = yb & 0x80000000u;
    let x_negative = xb >= 0x80000000u;
    if (ay > 0x7f800000u || ax > 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    // pi/4, pi/2, 3pi/4 and pi, each rounded to f32.
    if (ay == 0x7f800000u && ax == 0x7f800000u) {
        return bitcast<f32>(sign | select(0x3f490fdbu, 0x4016cbe4u, x_negative));
    }
    if (ay == 0u || ax == 0x7f800000u) {
        return bitcast<f32>(sign | select(0u, 0x40490fdbu, x_negative));
    }
    if (ax == 0u || ay == 0x7f800000u) {
        return bitcast<f32>(sign | 0x3fc90fdbu);
    }
    let uy = xcm_unpack(ay);
    let ux = xcm_unpack(ax);
    return xcm_angle(sign != 0u, x_negative, vec2<u32>(u32(uy.x) << 8u, 0u), uy.y, vec2<u32>(u32(ux.x) << 8u, 0u), ux.y);
}

// The angle of the point (x, y), y = Y 2^ky and x = X 2^kx (magnitudes, not 0; Y and X with
// their top bits set), in the left half-plane if `x_negative`, negated if `negative`: atan2
// once its special values are out of the way, rounded once.
fn xcm_angle(negative: bool, x_negative: bool, yv: vec2<u32>, ky: i32, xv: vec2<u32>, kx: i32) -> f32 {
    // t = small / large, in [0, 1].
    let steep = ky > kx || (ky == kx && (yv.x > xv.x || (yv.x == xv.x && yv.y > xv.y)));
    var small = yv;
    var large = xv;
    var k = ky - kx;
    if (steep) {
        small = xv;
        large = yv;
        k = kx - ky;
    }
    let q = xcm_div64(small, large);
    let a = xcm_atan_part(q.xy, bitcast<i32>(q.z) + k);
    if (!steep && !x_negative) {
        return xcm_round64_any(negative, a.xy, bitcast<i32>(a.z));
    }
    // The octant put back, in units of 2^-62 (pi < 4): a <= pi/4 there.
    let fixed = xcm_shr64(a.xy, u32(-62 - bitcast<i32>(a.z)));
    let half_pi = vec2<u32>(0x6487ed51u, 0x10b4611au);
    var r: vec2<u32>;
    if (!steep) {
        r = xcm_sub64(vec2<u32>(0xc90fdaa2u, 0x2168c235u), fixed);
    } else if (!x_negative) {
        r = xcm_sub64(half_pi, fixed);
    } else {
        r = xcm_add64(half_pi, fixed);
    }
    // r >= pi/4: at most two leading zeros.
    let n = countLeadingZeros(r.x);
    return xcm_round64_any(negative, xcm_shl64(r, n), -62 - i32(n));
}

// atan(t) for 0 < t <= 1, t = T 2^kt (T with its top bit set): (significand with its top bit
// set, exponent as bits).
fn xcm_atan_part(t: vec2<u32>, kt: i32) -> vec3<u32> {
    if (kt <= -69) {
        // t < 2^-5: the series alone.
        return xcm_atan_series(t, -63 - kt);
    }
    // f = t 2^63 (kt is -63 for t = 1), c = i/16 = i 2^59 in those units.
    let f = xcm_shr64(t, u32(-63 - kt));
    let i = (f.x + 0x04000000u) >> 27u;
    var table = array<vec2<u32>, 17>(
        vec2<u32>(0x00000000u, 0x00000000u),
        vec2<u32>(0x0ffaaddbu, 0x967ef4e3u),
        vec2<u32>(0x1fd5ba9au, 0xac2f6dc6u),
        vec2<u32>(0x2f72f697u, 0x9cb6044du),
        vec2<u32>(0x3eb6ebf2u, 0x5901bac5u),
        vec2<u32>(0x4d89dcdcu, 0x1faf2f35u),
        vec2<u32>(0x5bd86507u, 0x937bc23au),
        vec2<u32>(0x6993bb0fu, 0x308ff2dbu),
        vec2<u32>(0x76b19c15u, 0x86ed3da3u),
        vec2<u32>(0x832bf4a6u, 0xd9867e2au),
        vec2<u32>(0x8f005d5eu, 0xf7f59f9bu),
        vec2<u32>(0x9a2f80e6u, 0x71bdda20u),
        vec2<u32>(0xa4bc7d19u, 0x34f70924u),
        vec2<u32>(0xaeac4c38u, 0xb4d8c080u),
        vec2<u32>(0xb8053e2bu, 0xc2319e74u),
        vec2<u32>(0xc0ce85b8u, 0xac526641u),
        vec2<u32>(0xc90fdaa2u, 0x2168c235u),
    );
    // atan(i/16) in units of 2^-64.
    var r = table[i];
    let c = vec2<u32>(i << 27u, 0u);
    let below = f.x < c.x || (f.x == c.x && f.y < c.y);
    var num = xcm_sub64(f, c);
    if (below) {
        num = xcm_sub64(c, f);
    }
    if (num.x != 0u || num.y != 0u) {
        // d = |t - c| / (1 + t c): the numerator in units of 2^-63, the denominator (in
        // [1, 2]) in units of 2^-62, both normalized for the division.
        let den = xcm_mulhi64(f, c);
        let den_n = vec2<u32>(den.x + 0x40000000u, den.y);
        let nd = countLeadingZeros(den_n.x);
        var nn = countLeadingZeros(num.x);
        if (num.x == 0u) {
            nn = 32u + countLeadingZeros(num.y);
        }
        let q = xcm_div64(xcm_shl64(num, nn), xcm_shl64(den_n, nd));
        let kd = bitcast<i32>(q.z) - 63 - i32(nn) + 62 + i32(nd);
        let s = xcm_atan_series(q.xy, -63 - kd);
        // atan(d) <= 2^-5 in units of 2^-64, added to or taken from atan(c).
        let fixed = xcm_shr64(s.xy, u32(-64 - bitcast<i32>(s.z)));
        if (below) {
            r = xcm_sub64(r, fixed);
        } else {
            r = xcm_add64(r, fixed);
        }
    }
    // r = atan(t) >= atan(2^-5) > 2^-6: at most six leading zeros.
    let n = countLeadingZeros(r.x);
    let y = xcm_shl64(r, n);
    return vec3<u32>(y.x, y.y, bitcast<u32>(-64 - i32(n)));
}

// atan(d) for d = D 2^-(63 + z) <= 2^-5 (z >= 5), relative to d, as `xcm_atan_part` returns it.
fn xcm_atan_series(d: vec2<u32>, z: i32) -> vec3<u32> {
    // 1/3, 1/5, ..., 1/15 in units of 2^-64.
    var series = array<vec2<u32>, 7>(
        vec2<u32>(0x55555555u, 0x55555555u),
        vec2<u32>(0x33333333u, 0x33333333u),
        vec2<u32>(0x24924924u, 0x92492492u),
        vec2<u32>(0x1c71c71cu, 0x71c71c72u),
        vec2<u32>(0x1745d174u, 0x5d1745d1u),
        vec2<u32>(0x13b13b13u, 0xb13b13b1u),
        vec2<u32>(0x11111111u, 0x11111111u),
    );
    // v = d^2 in units of 2^-64 (0 where it is below them).
    let v = xcm_shr64(xcm_mulhi64(d, d), u32(min(2 * z - 2, 64)));
    var a = series[6];
    for (var k = 5; k >= 0; k = k - 1) {
        a = xcm_sub64(series[k], xcm_mulhi64(v, a));
    }
    // d - d v A(v), at least (1 - 2^-11.5) d: normalized by one bit at most.
    var y = xcm_sub64(d, xcm_mulhi64(d, xcm_mulhi64(v, a)));
    var k = -63 - z;
    if (y.x < 0x80000000u) {
        y = vec2<u32>((y.x << 1u) | (y.y >> 31u), y.y << 1u);
        k = k - 1;
    }
    return vec3<u32>(y.x, y.y, bitcast<u32>(k));
}
