// exp2(x) = 2^x, correctly rounded (round to nearest, ties to even) for every f32 x: proven on
// all 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math
// functions").
//
// x = k/8 + r with |r| <= 1/16, r exact (Sterbenz), so 2^x = 2^(k/8) * exp(r ln2), with r ln2
// in double-f32 (ln2 in two parts: about 2^-57 absolute error), finished as exp's
// (`xcm_exp_scaled`). The arguments where double-f32 is not precise enough to round right
// (found by the proof) are answered from a list.
fn xcm_exp2(x: f32) -> f32 {
    if (x != x) {
        return x;
    }
    // 2^x rounds to infinity from 128 up, and to 0 from -150 down (2^-150 is the tie between
    // 0 and the smallest subnormal, and 0 is even).
    if (x >= 128.0) {
        return bitcast<f32>(0x7f800000u);
    }
    if (x <= -150.0) {
        return 0.0;
    }
    // |x| < 2^-25: 2^x is 1 after rounding.
    if (abs(x) < bitcast<f32>(0x33000000u)) {
        return 1.0;
    }
    switch bitcast<u32>(x) {
        case 0x33b8aa3bu: { return bitcast<f32>(0x3f800001u); }
        case 0x37e338ebu: { return bitcast<f32>(0x3f80009du); }
        case 0x383ecb1du: { return bitcast<f32>(0x3f800109u); }
        case 0x3a0b4316u: { return bitcast<f32>(0x3f800c11u); }
        case 0x3b429d37u: { return bitcast<f32>(0x3f804385u); }
        case 0x3b53aa14u: { return bitcast<f32>(0x3f804971u); }
        case 0x3c02a9adu: { return bitcast<f32>(0x3f80b5a3u); }
        case 0x3dc9abe2u: { return bitcast<f32>(0x3f890ab5u); }
        case 0xb338aa3cu: { return bitcast<f32>(0x3f7fffffu); }
        case 0xb4fdea14u: { return bitcast<f32>(0x3f7ffffbu); }
        case 0xb5160a52u: { return bitcast<f32>(0x3f7ffff9u); }
        case 0xb63b8cf0u: { return bitcast<f32>(0x3f7fffdfu); }
        case 0xb8d3d026u: { return bitcast<f32>(0x3f7ffb69u); }
        case 0xbcaf4d02u: { return bitcast<f32>(0x3f7c3b19u); }
        case 0xbcf3a937u: { return bitcast<f32>(0x3f7ac6b1u); }
        default: {}
    }
    let kf = round(x * 8.0);
    let r = x - kf * 0.125;
    let t = xcm_two_prod(r, bitcast<f32>(0x3f317218u));
    return xcm_exp_scaled(i32(kf), xcm_fast_two_sum(t.x, t.y + r * bitcast<f32>(0xb102e308u)));
}
