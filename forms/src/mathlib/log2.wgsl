// log2(x), correctly rounded (round to nearest, ties to even) for every f32 x: proven on all
// 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math functions").
//
// x = 2^e * m, and log2(x) = e + log(m) / ln2 (`xcm_log_parts`, then a double-f32 product by
// 1/ln2), the sum rounded once (`xcm_round_sum`): exact (an integer) where x is a power of 2.
// No argument needs a list.
fn xcm_log2(x: f32) -> f32 {
    if (x != x) {
        return x;
    }
    if (x < 0.0) {
        return bitcast<f32>(0x7fc00000u);
    }
    if (x == 0.0) {
        return bitcast<f32>(0xff800000u);
    }
    if (x == bitcast<f32>(0x7f800000u)) {
        return x;
    }
    let p = xcm_log_parts(x);
    let l = xcm_df_mul(vec2<f32>(p.y, p.z), vec2<f32>(bitcast<f32>(0x3fb8aa3bu), bitcast<f32>(0x32a57060u)));
    return xcm_round_sum(p.x, l);
}
