// log(x), correctly rounded (round to nearest, ties to even) for every f32 x: proven on all
// 2^32 arguments by scripts/math-proof against CORE-MATH (docs/kernels.md, "Math functions").
//
// x = 2^e * m, and log(x) = e ln2 + log(m) (`xcm_log_parts`), with ln2 in three parts (the
// first two of 16 bits, so each e * part is exact), the sum split exactly into three f32 and
// rounded once (`xcm_round_sum`). The one argument where that is not precise enough to round
// right (found by the proof) is answered from a list.
fn xcm_log(x: f32) -> f32 {
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
    switch bitcast<u32>(x) {
        case 0x41178febu: { return bitcast<f32>(0x400fe5e7u); }
        default: {}
    }
    return xcm_log_round(xcm_log_parts(x));
}

// e ln2 + l for p = (e, l in double-f32), rounded once, with ln2 in three parts (the first two
// of 16 bits, so each e * part is exact for |e| below 2^8).
fn xcm_log_round(p: vec3<f32>) -> f32 {
    let a = xcm_two_sum(p.x * bitcast<f32>(0x3f317200u), p.y);
    let b = xcm_two_sum(a.x, p.x * bitcast<f32>(0x35bfbf00u));
    let c = xcm_two_sum(a.y, b.y);
    let d = xcm_two_sum(c.x, p.z + p.x * bitcast<f32>(0xad630865u));
    return xcm_round_sum(b.x, vec2<f32>(d.x, d.y + c.y));
}

// For a positive finite x = 2^e * m with m in [0.703125, 1.40625): (e, log(m) in double-f32),
// log(m) to about 2^-48 relative error, and log(m) = 0 exactly where m = 1.
// - m * c = 1 + r, with c from a table of 16 buckets (the fraction rounded to 4 bits), near
//   1/m with 10 significant bits: r is exact in double-f32 and |r| <= 2^-5, never below 2^-34
//   unless 0 (so no intermediate value is subnormal);
// - log(m) = -log(c) (the table, in double-f32) + log(1 + r), where log(1 + r) = r + r^2 q(r),
//   q's terms to r^9 (the next is below 2^-58 of the result), its five highest in f32 and the
//   rest by Horner's scheme in double-f32.
// The table comes from scripts/mathlib-tables: it is small, as a large one slows llvmpipe's
// compiler (128 buckets took it over a minute for a kernel calling log three times); bucket 0
// (m near 1) has c = 1.
fn xcm_log_parts(x: f32) -> vec3<f32> {
    var bits = bitcast<u32>(x);
    var e = -127;
    if (bits < 0x00800000u) {
        // Subnormal: scaled by 2^23, exactly.
        bits = bitcast<u32>(x * 8388608.0);
        e = -150;
    }
    // The fraction rounded to 4 bits (which may carry into the exponent) picks the bucket, and
    // m is x over the rounded value's power of 2, in [1 - 2^-6, 2 - 2^-5).
    let k = bits + 0x00040000u;
    e = e + i32(k >> 23u);
    var m = bitcast<f32>(bits - (k & 0x7f800000u) + 0x3f800000u);
    let i = (k >> 19u) & 15u;
    if (i >= 7u) {
        m = m * 0.5;
        e = e + 1;
    }
    let t = xcm_log_table(i);
    let mc = xcm_two_prod(m, t.x);
    let l = xcm_log_tail(t, xcm_fast_two_sum(mc.x - 1.0, mc.y));
    return vec3<f32>(f32(e), l.x, l.y);
}

// log(1 + u) as `xcm_log_parts` gives a logarithm, (e, log(m) in double-f32), for u >= 0 in
// double-f32 with 1 + u below 2^100: the bucket and e from 1 + u rounded to f32, and
// r = (1 + u) c 2^-e - 1 = (c' - 1) + u c' with c' = c 2^-e (c' - 1 exact in double-f32, u c'
// to about 2^-48 of it). Where 1 + u falls in bucket 0 with e = 0, c' = 1 and r is u itself:
// the result keeps u's relative precision however small u is (asinh, acosh and atanh near
// their zeros).
fn xcm_log1p_parts(u: vec2<f32>) -> vec3<f32> {
    let k = bitcast<u32>(1.0 + u.x) + 0x00040000u;
    var e = i32(k >> 23u) - 127;
    let i = (k >> 19u) & 15u;
    if (i >= 7u) {
        e = e + 1;
    }
    let t = xcm_log_table(i);
    let c = t.x * xcm_pow2(-e);
    let uc = xcm_df_mul(u, vec2<f32>(c, 0.0));
    let d = xcm_two_sum(c, -1.0);
    let s = xcm_two_sum(d.x, uc.x);
    let r = xcm_two_sum(s.x, (s.y + d.y) + uc.y);
    let l = xcm_log_tail(t, r);
    return vec3<f32>(f32(e), l.x, l.y);
}

// (c, -log(c) in double-f32) for bucket i (`xcm_log_parts`).
fn xcm_log_table(i: u32) -> vec3<f32> {
    var table = array<vec3<f32>, 16>(
        vec3<f32>(0x1p+0f, 0.0, 0.0),
        vec3<f32>(0x1.e2p-1f, 0x1.eea31cp-5f, 0x1.ae1eecp-39f),
        vec3<f32>(0x1.c7p-1f, 0x1.e3707ep-4f, 0x1.c6091p-29f),
        vec3<f32>(0x1.afp-1f, 0x1.60b31p-3f, 0x1.6128ecp-32f),
        vec3<f32>(0x1.998p-1f, 0x1.c97f8p-3f, 0x1.e7513cp-29f),
        vec3<f32>(0x1.86p-1f, 0x1.16b5ccp-2f, 0x1.759f6ep-27f),
        vec3<f32>(0x1.748p-1f, 0x1.45b8cp-2f, 0x1.42fbe2p-27f),
        vec3<f32>(0x1.64p+0f, -0x1.51aad8p-2f, -0x1.cb7e0cp-28f),
        vec3<f32>(0x1.558p+0f, -0x1.27161ap-2f, 0x1.d80f58p-27f),
        vec3<f32>(0x1.478p+0f, -0x1.f871b2p-3f, -0x1.12aa08p-28f),
        vec3<f32>(0x1.3bp+0f, -0x1.a8bedp-3f, 0x1.bbe874p-30f),
        vec3<f32>(0x1.2f8p+0f, -0x1.5c94p-3f, -0x1.d65caep-29f),
        vec3<f32>(0x1.248p+0f, -0x1.10f8e4p-3f, -0x1.129cd8p-30f),
        vec3<f32>(0x1.1a8p+0f, -0x1.9375e6p-4f, 0x1.54d424p-29f),
        vec3<f32>(0x1.11p+0f, -0x1.075984p-4f, 0x1.4ce372p-29f),
        vec3<f32>(0x1.088p+0f, -0x1.0b94f8p-5f, 0x1.f34f44p-32f),
    );
    return table[i];
}

// -log(c) + log(1 + r) in double-f32, for t = (c, -log(c) in double-f32) from the table and
// m c = 1 + r, |r| <= 2^-5 in double-f32 (so log(m) = -log(c) + log(1 + r)).
fn xcm_log_tail(t: vec3<f32>, r: vec2<f32>) -> vec2<f32> {
    // q(r) = -1/2 + r/3 - r^2/4 + r^3/5 - r^4/6 + r^5 (1/7 - r/8 + r^2/9 - r^3/10 + r^4/11).
    let tail = bitcast<f32>(0x3e124925u) + r.x * (-0.125 + r.x * (bitcast<f32>(0x3de38e39u) + r.x * (bitcast<f32>(0xbdcccccdu) + r.x * bitcast<f32>(0x3dba2e8cu))));
    var q = xcm_df_step(vec2<f32>(bitcast<f32>(0xbe2aaaabu), bitcast<f32>(0x31aaaaabu)), r, vec2<f32>(tail, 0.0));
    q = xcm_df_step(vec2<f32>(bitcast<f32>(0x3e4ccccdu), bitcast<f32>(0xb14ccccdu)), r, q);
    q = xcm_df_step(vec2<f32>(-0.25, 0.0), r, q);
    q = xcm_df_step(vec2<f32>(bitcast<f32>(0x3eaaaaabu), bitcast<f32>(0xb22aaaabu)), r, q);
    q = xcm_df_step(vec2<f32>(-0.5, 0.0), r, q);
    // Below |r| = 2^-36 (asinh's and acosh's log1p just above a power of 2, where r can be a
    // power of 2 itself and so r q exact, its low part as small as r^2 q), r times that low part
    // is under 2^-61 of the result and can be subnormal: left out, so that llvmpipe need not
    // decline the tile. log's own r is never that small unless 0.
    var rq = xcm_df_mul(r, q);
    if (abs(r.x) < 0x1p-36f) {
        rq.y = 0.0;
    }
    let w = xcm_df_mul(r, rq);
    let s = xcm_two_sum(t.y, r.x);
    let u = xcm_two_sum(s.x, w.x);
    return xcm_fast_two_sum(u.x, ((s.y + u.y) + (t.z + r.y)) + w.y);
}
