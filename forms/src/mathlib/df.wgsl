// Double-f32 arithmetic: a value as the unevaluated sum hi + lo of two f32 (a `vec2<f32>`, hi
// first), from exact IEEE operations only (no fma: every form rounds each + - * once, with no
// contraction). Dekker's and Knuth's error-free transformations; about 47 bits of precision.

// a + b exactly, as (rounded sum, its error) (Knuth's TwoSum).
fn xcm_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    let bb = s - a;
    return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

// a + b exactly when |a| >= |b| or a is 0 (Dekker's FastTwoSum).
fn xcm_fast_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    return vec2<f32>(s, b - (s - a));
}

// a as two halves of at most 12 significant bits each (Veltkamp's split, 4097 = 2^12 + 1).
fn xcm_split(a: f32) -> vec2<f32> {
    let c = 4097.0 * a;
    let h = c - (c - a);
    return vec2<f32>(h, a - h);
}

// a * b exactly, as (rounded product, its error) (Dekker's TwoProduct).
fn xcm_two_prod(a: f32, b: f32) -> vec2<f32> {
    let p = a * b;
    let x = xcm_split(a);
    let y = xcm_split(b);
    return vec2<f32>(p, ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y);
}

// The double-f32 product of two double-f32 values.
fn xcm_df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let p = xcm_two_prod(a.x, b.x);
    return xcm_fast_two_sum(p.x, p.y + (a.x * b.y + a.y * b.x));
}

// c + r * acc in double-f32: one step of a Horner scheme.
fn xcm_df_step(c: vec2<f32>, r: vec2<f32>, acc: vec2<f32>) -> vec2<f32> {
    let p = xcm_df_mul(r, acc);
    let s = xcm_two_sum(c.x, p.x);
    return xcm_fast_two_sum(s.x, s.y + (c.y + p.y));
}

// 2^e for e in [-126, 127], exactly.
fn xcm_pow2(e: i32) -> f32 {
    return bitcast<f32>(u32(e + 127) << 23u);
}

// hi + rest.x + rest.y rounded once (to nearest, ties to even), for rest a double-f32 value
// (|rest.y| <= ulp(rest.x) / 2) that does not cancel most of hi. The sum is split exactly into
// s + t.x + t.y (|t.x| <= ulp(s) / 2), and t.x + t.y rounded to odd (t.x moved by one unit in
// its last place towards t.y where t.x is even and t.y is not 0): a midpoint of the f32 grid
// near s is an even multiple of t.x's unit, which the exact sum and s + (rounded t) then lie
// on the same side of. Where hi is 0 (or small) the result is rest.x + rest.y rounded, so its
// precision is rest's own.
fn xcm_round_sum(hi: f32, rest: vec2<f32>) -> f32 {
    let s = xcm_two_sum(hi, rest.x);
    let t = xcm_two_sum(s.y, rest.y);
    let b = bitcast<u32>(t.x);
    var odd = t.x;
    if (t.y != 0.0 && (b & 1u) == 0u) {
        if ((t.y > 0.0) == (t.x > 0.0)) {
            odd = bitcast<f32>(b + 1u);
        } else {
            odd = bitcast<f32>(b - 1u);
        }
    }
    return s.x + odd;
}
