// WGSL's packing builtins and quantizeToF16, exact: each gives the value WGSL's definition
// gives in real numbers, in integers, so every device gives the same bits (WGSL leaves their
// rounding, and its f16 conversions, to the device). Checked on every edge and random values
// against references written apart (the `half` crate's f16 conversions; WGSL's formulas in
// f64): docs/kernels.md, "Math functions".

// f32 to binary16 bits, rounded to nearest, ties to even (IEEE 754's convertFormat): subnormal
// halves kept, past 65520 the infinity of x's sign, NaN the quiet NaN 0x7e00 (a NaN's bits
// are 0x7fc00000 in every form, docs/kernels.md).
fn xcm_half_bits(x: f32) -> u32 {
    let bits = bitcast<u32>(x);
    let sign = (bits >> 16u) & 0x8000u;
    let a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return 0x7e00u;
    }
    // 65520 = 0x477ff000, halfway between the largest half (65504) and 2^16: ties to even, up.
    if (a >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    var q: u32;
    var r: u32;
    var mid: u32;
    if (a < 0x38800000u) {
        // Below 2^-14: a subnormal half, |x| / 2^-24 rounded to an integer. At most 2^-25 (a
        // tie with 0, to even) it is 0.
        if (a <= 0x33000000u) {
            return sign;
        }
        let e = a >> 23u;
        let m = (a & 0x7fffffu) | 0x800000u;
        // |x| = m 2^(e - 150) = m 2^(e - 126) units of 2^-24; e in [102, 112], so a shift of 14 to 24.
        let k = 126u - e;
        q = m >> k;
        r = m & ((1u << k) - 1u);
        mid = 1u << (k - 1u);
    } else {
        // A normal half: the exponent rebiased (127 to 15) and 13 bits rounded off; a carry
        // moves into the exponent as it should (to the infinity only past 65520, above).
        let rebiased = a - 0x38000000u;
        q = rebiased >> 13u;
        r = rebiased & 0x1fffu;
        mid = 0x1000u;
    }
    let up = r > mid || (r == mid && (q & 1u) == 1u);
    return sign | (q + u32(up));
}

// Binary16 bits `h` (the low 16) as the f32 of the same value, exactly: subnormal halves are
// normal f32; NaN is NaN.
fn xcm_half_value(h: u32) -> f32 {
    let sign = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 31u) {
        return bitcast<f32>(select(sign | 0x7f800000u, 0x7fc00000u, m != 0u));
    }
    if (e == 0u) {
        if (m == 0u) {
            return bitcast<f32>(sign);
        }
        // m 2^-24 with m below 2^10: its leading bit moved to bit 23, the exponent to match.
        let lz = countLeadingZeros(m);
        return bitcast<f32>(sign | ((134u - lz) << 23u) | ((m << (lz - 8u)) & 0x7fffffu));
    }
    return bitcast<f32>(sign | ((e + 112u) << 23u) | (m << 13u));
}

// quantizeToF16(x): x rounded to binary16 and back (ties to even; subnormal halves kept, not
// flushed; past the largest half the infinity of x's sign, which WGSL leaves open).
fn xcm_quantize_to_f16(x: f32) -> f32 {
    return xcm_half_value(xcm_half_bits(x));
}

fn xcm_pack2x16float(e: vec2<f32>) -> u32 {
    return xcm_half_bits(e.x) | (xcm_half_bits(e.y) << 16u);
}

fn xcm_unpack2x16float(e: u32) -> vec2<f32> {
    return vec2<f32>(xcm_half_value(e & 0xffffu), xcm_half_value(e >> 16u));
}

// floor(0.5 + s c), exactly, for c = x clamped to [-1, 1] (`is_signed`) or [0, 1], and s below
// 2^16 (WGSL's snorm and unorm formulas); NaN gives 0. With |c| = m 2^(e - 150): s m is below
// 2^40, held as big 2^12 + low (big below 2^29, low below 2^12), and shifted right by e's
// distance with the part shifted out compared with 1/2: floor(0.5 + t) = t rounded half up,
// floor(0.5 - t) = -(t rounded half down).
fn xcm_pack_norm(x: f32, s: u32, is_signed: bool) -> i32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    let negative = (bits >> 31u) != 0u;
    if (a > 0x7f800000u || (negative && !is_signed)) {
        return 0;
    }
    if (a >= 0x3f800000u) {
        return select(i32(s), -i32(s), negative);
    }
    let e = a >> 23u;
    // The shift of `big`: 150 - e - 12. From 30 on, s |c| < 2^29 / 2^30 = 1/2, which gives 0
    // either way (zeros and subnormals included).
    let k = 138u - e;
    if (k >= 30u) {
        return 0;
    }
    let m = (a & 0x7fffffu) | 0x800000u;
    let high = s * (m >> 12u);
    let low_product = s * (m & 0xfffu);
    let big = high + (low_product >> 12u);
    let low = low_product & 0xfffu;
    let q = big >> k;
    let r = big & ((1u << k) - 1u);
    let mid = 1u << (k - 1u);
    let above = r > mid || (r == mid && low != 0u);
    let at = r == mid && low == 0u;
    if (negative) {
        return -i32(q + u32(above));
    }
    return i32(q + u32(above || at));
}

fn xcm_pack4x8snorm(e: vec4<f32>) -> u32 {
    let b = vec4<u32>(
        bitcast<u32>(xcm_pack_norm(e.x, 127u, true)),
        bitcast<u32>(xcm_pack_norm(e.y, 127u, true)),
        bitcast<u32>(xcm_pack_norm(e.z, 127u, true)),
        bitcast<u32>(xcm_pack_norm(e.w, 127u, true)),
    );
    return xcm_bytes(b);
}

fn xcm_pack4x8unorm(e: vec4<f32>) -> u32 {
    let b = vec4<u32>(
        u32(xcm_pack_norm(e.x, 255u, false)),
        u32(xcm_pack_norm(e.y, 255u, false)),
        u32(xcm_pack_norm(e.z, 255u, false)),
        u32(xcm_pack_norm(e.w, 255u, false)),
    );
    return xcm_bytes(b);
}

fn xcm_pack2x16snorm(e: vec2<f32>) -> u32 {
    let lo = bitcast<u32>(xcm_pack_norm(e.x, 32767u, true)) & 0xffffu;
    return lo | (bitcast<u32>(xcm_pack_norm(e.y, 32767u, true)) << 16u);
}

fn xcm_pack2x16unorm(e: vec2<f32>) -> u32 {
    return u32(xcm_pack_norm(e.x, 65535u, false)) | (u32(xcm_pack_norm(e.y, 65535u, false)) << 16u);
}

// max(v / s, -1) for each of v, as WGSL defines the snorm unpacking (the division IEEE's):
// -1 for v = -s - 1, the one value below -s.
fn xcm_snorm4(v: vec4<i32>, s: f32, lowest: i32) -> vec4<f32> {
    return select(vec4<f32>(v) / s, vec4<f32>(-1.0), v == vec4<i32>(lowest));
}

fn xcm_unpack4x8snorm(e: u32) -> vec4<f32> {
    return xcm_snorm4(xcm_unpack4xI8(e), 127.0, -128);
}

fn xcm_unpack4x8unorm(e: u32) -> vec4<f32> {
    return vec4<f32>(xcm_unpack4xU8(e)) / 255.0;
}

fn xcm_unpack2x16snorm(e: u32) -> vec2<f32> {
    let v = vec4<i32>(bitcast<i32>(e << 16u) >> 16u, bitcast<i32>(e) >> 16u, 0, 0);
    return xcm_snorm4(v, 32767.0, -32768).xy;
}

fn xcm_unpack2x16unorm(e: u32) -> vec2<f32> {
    return vec2<f32>(f32(e & 0xffffu), f32(e >> 16u)) / 65535.0;
}

// The low byte of each of b, byte i at bits 8 i to 8 i + 7.
fn xcm_bytes(b: vec4<u32>) -> u32 {
    return (b.x & 0xffu) | ((b.y & 0xffu) << 8u) | ((b.z & 0xffu) << 16u) | ((b.w & 0xffu) << 24u);
}

fn xcm_pack4xI8(e: vec4<i32>) -> u32 {
    return xcm_bytes(bitcast<vec4<u32>>(e));
}

fn xcm_pack4xU8(e: vec4<u32>) -> u32 {
    return xcm_bytes(e);
}

fn xcm_pack4xI8Clamp(e: vec4<i32>) -> u32 {
    return xcm_bytes(bitcast<vec4<u32>>(clamp(e, vec4<i32>(-128), vec4<i32>(127))));
}

fn xcm_pack4xU8Clamp(e: vec4<u32>) -> u32 {
    return xcm_bytes(min(e, vec4<u32>(255u)));
}

fn xcm_unpack4xI8(e: u32) -> vec4<i32> {
    return vec4<i32>(bitcast<i32>(e << 24u), bitcast<i32>(e << 16u), bitcast<i32>(e << 8u), bitcast<i32>(e)) >> vec4<u32>(24u);
}

fn xcm_unpack4xU8(e: u32) -> vec4<u32> {
    return (vec4<u32>(e) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu);
}

fn xcm_dot4I8Packed(a: u32, b: u32) -> i32 {
    let p = xcm_unpack4xI8(a) * xcm_unpack4xI8(b);
    return p.x + p.y + p.z + p.w;
}

fn xcm_dot4U8Packed(a: u32, b: u32) -> u32 {
    let p = xcm_unpack4xU8(a) * xcm_unpack4xU8(b);
    return p.x + p.y + p.z + p.w;
}
