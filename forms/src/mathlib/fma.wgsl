// fma(a, b, c): a * b + c rounded once (round to nearest, ties to even) for every f32 a, b, c:
// IEEE 754's fusedMultiplyAdd, C's fmaf. WGSL lets each device fuse its own `fma` or not; this
// one is fused everywhere. Checked on every triple of edge values and random triples
// against musl's fmaf (scripts/math-proof --pairs; docs/kernels.md, "Math functions").
//
// All in integer arithmetic, with no float value made on the way (so llvmpipe declines a tile
// only where an argument or the result is subnormal):
// - a * b exactly, as a 64-bit significand (the two 24-bit significands, each shifted up by 8,
//   multiplied: at most 48 bits that count) and an exponent;
// - c as a 64-bit significand (24 bits that count) and an exponent;
// - the smaller of the two shifted to the larger's exponent, the bits shifted out "jammed"
//   into its lowest bit (set it if any was 1: `xcm_shr64_jam`). Both significands end in at
//   least 16 zero bits, so the larger one is even at bit 0 and the sum or difference is odd
//   there exactly when bits were lost; the exact value then lies strictly between two
//   neighbouring integers, one odd (the computed one) and one even, so no midpoint of the
//   f32 grid (a multiple of 2^38 or more) falls between them, and rounding the computed value
//   rounds the exact one. A difference cancels at most one bit when bits were lost (the
//   smaller was shifted by 17 or more), and a carry out of a sum shifts one bit out, jammed
//   the same way;
// - the result rounded once by `xcm_round64_any`, to a normal, a subnormal or infinity.
fn xcm_fma(a: f32, b: f32, c: f32) -> f32 {
    let ab = bitcast<u32>(a);
    let bb = bitcast<u32>(b);
    let cb = bitcast<u32>(c);
    let aa = ab & 0x7fffffffu;
    let ba = bb & 0x7fffffffu;
    let ca = cb & 0x7fffffffu;
    let product_sign = (ab ^ bb) & 0x80000000u;
    let nan = bitcast<f32>(0x7fc00000u);
    if (aa > 0x7f800000u || ba > 0x7f800000u || ca > 0x7f800000u) {
        return nan;
    }
    if (aa == 0x7f800000u || ba == 0x7f800000u) {
        // An infinite product: NaN for inf * 0 and for inf - inf, else that infinity.
        if (aa == 0u || ba == 0u || (ca == 0x7f800000u && (cb & 0x80000000u) != product_sign)) {
            return nan;
        }
        return bitcast<f32>(product_sign | 0x7f800000u);
    }
    if (ca == 0x7f800000u) {
        return c;
    }
    if (aa == 0u || ba == 0u) {
        // A zero product adds nothing, but its sign counts where c is a zero too: -0 only
        // where both are -0 (round to nearest).
        if (ca == 0u) {
            return bitcast<f32>(product_sign & cb);
        }
        return c;
    }
    // a * b = p 2^kp, p with its top bit set.
    let ua = xcm_unpack(aa);
    let ub = xcm_unpack(ba);
    var p = xcm_mul32(u32(ua.x) << 8u, u32(ub.x) << 8u);
    var kp = ua.y + ub.y - 62;
    if (p.x < 0x80000000u) {
        p = vec2<u32>((p.x << 1u) | (p.y >> 31u), p.y << 1u);
        kp = kp - 1;
    }
    if (ca == 0u) {
        return xcm_round64_any(product_sign != 0u, p, kp);
    }
    // c = q 2^kq, q with its top bit set.
    let uc = xcm_unpack(ca);
    return xcm_add_parts(product_sign != 0u, p, kp, (cb & 0x80000000u) != 0u, vec2<u32>(u32(uc.x) << 8u, 0u), uc.y - 63);
}

// (-1)^sp p 2^kp + (-1)^sq q 2^kq rounded once, for p and q 64-bit significands with their top
// bits set and at least 16 zero bits at the bottom (see `xcm_fma`).
fn xcm_add_parts(sp: bool, p: vec2<u32>, kp: i32, sq: bool, q: vec2<u32>, kq: i32) -> f32 {
    // x: the larger in magnitude, y the other.
    var x = p;
    var kx = kp;
    var sx = sp;
    var y = q;
    var ky = kq;
    if (kq > kp || (kq == kp && (q.x > p.x || (q.x == p.x && q.y > p.y)))) {
        x = q;
        kx = kq;
        sx = sq;
        y = p;
        ky = kp;
    }
    let z = xcm_shr64_jam(y, u32(min(kx - ky, 64)));
    if (sp == sq) {
        // A sum: 65 bits at most; a carry shifts one bit out, jammed.
        let lo = x.y + z.y;
        let c0 = u32(lo < x.y);
        let hi1 = x.x + z.x;
        let hi = hi1 + c0;
        if (hi1 < x.x || hi < hi1) {
            return xcm_round64_any(sx, vec2<u32>((hi >> 1u) | 0x80000000u, (lo >> 1u) | (hi << 31u) | (lo & 1u)), kx + 1);
        }
        return xcm_round64_any(sx, vec2<u32>(hi, lo), kx);
    }
    // A difference, x >= z: zero only where exact (+0, round to nearest), then normalized.
    let d = xcm_sub64(x, z);
    if (d.x == 0u && d.y == 0u) {
        return 0.0;
    }
    var n = countLeadingZeros(d.x);
    if (d.x == 0u) {
        n = 32u + countLeadingZeros(d.y);
    }
    return xcm_round64_any(sx, xcm_shl64(d, n), kx - i32(n));
}

// a >> n for a 64-bit value (n <= 64), with bit 0 set if any bit shifted out was 1.
fn xcm_shr64_jam(a: vec2<u32>, n: u32) -> vec2<u32> {
    var lost = false;
    if (n >= 64u) {
        lost = a.x != 0u || a.y != 0u;
    } else if (n >= 32u) {
        lost = a.y != 0u || (a.x & ((1u << (n - 32u)) - 1u)) != 0u;
    } else if (n != 0u) {
        lost = (a.y & ((1u << n) - 1u)) != 0u;
    }
    let s = xcm_shr64(a, n);
    return vec2<u32>(s.x, s.y | u32(lost));
}
