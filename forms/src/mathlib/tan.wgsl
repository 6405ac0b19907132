// tan(x), correctly rounded (round to nearest, ties to even) for every f32 x: checked against
// CORE-MATH by scripts/math-proof and mathcheck's tests (docs/kernels.md, "Math functions").
//
// In integer arithmetic, as sin and cos (sincos.wgsl), whose reduction and series it shares:
// x = N pi/2 + r exactly as there, sin(r) and cos(r) as 64-bit significands (each within about
// 2^-60 of its value), and their quotient, tan(r) = sin(r) / cos(r) for an even N and
// -cos(r) / sin(r) for an odd one, by long division to 64 bits (`xcm_div64`), rounded once.
// No float value is made on the way, so llvmpipe declines a tile only where the argument is
// subnormal.
fn xcm_tan(x: f32) -> f32 {
    let bits = bitcast<u32>(x);
    let a = bits & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        return bitcast<f32>(0x7fc00000u);
    }
    // |x| < 2^-12: tan(x) = x + x^3/3 + ... is within x^2/3 < 2^-25.5 of x (relatively),
    // less than half a unit of x's last place: it rounds to x.
    if (a < 0x39800000u) {
        return x;
    }
    let r = xcm_reduce_any(a);
    let z = i32(r.z);
    let rn = vec2<u32>(r.x, r.y);
    let u = xcm_shr64(xcm_mulhi64(rn, rn), u32(2 * z - 2));
    var num = xcm_sin_part(rn, z, u);
    var den = xcm_cos_part(u);
    let odd = (r.w & 1u) == 1u;
    if (odd) {
        let s = num;
        num = den;
        den = s;
    }
    // tan(N pi/2 + r) is tan(r) for an even N, -1/tan(r) for an odd one; tan(-r) = -tan(r),
    // and tan(-x) = -tan(x).
    let negative = (((r.w & 4u) != 0u) != odd) != (bits != a);
    let q = xcm_div64(num.xy, den.xy);
    return xcm_round64_any(negative, q.xy, bitcast<i32>(num.z) - bitcast<i32>(den.z) + bitcast<i32>(q.z));
}
