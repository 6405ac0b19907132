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

// a + b in double-f32, for a and b of one sign (or where they cancel no more than a few bits).
fn xcm_df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let s = xcm_two_sum(a.x, b.x);
    return xcm_fast_two_sum(s.x, s.y + (a.y + b.y));
}

// 1/b correctly rounded, for b > 0 normal within 2^±60, whatever the device's own division
// gives (Vulkan allows it 2.5 units off, and NVIDIA's driver is off): its quotient q, one Newton
// step (q + q(1 - qb), within 0.5 units and a hair, so q or a neighbour), and the exact
// remainder 1 - qb (a two-product) against half the gap to each neighbour times b (exact: the
// gap is a power of 2). A quotient is never halfway between two f32, so that decides.
fn xcm_recip(b: f32) -> f32 {
    let q0 = 1.0 / b;
    let p0 = xcm_two_prod(q0, b);
    let q = q0 + q0 * ((1.0 - p0.x) - p0.y);
    let p = xcm_two_prod(q, b);
    let r = (1.0 - p.x) - p.y;
    let bits = bitcast<u32>(q);
    let up = bitcast<f32>(bits + 1u);
    let down = bitcast<f32>(bits - 1u);
    if (r > (up - q) * 0.5 * b) {
        return up;
    }
    if (r < -((q - down) * 0.5 * b)) {
        return down;
    }
    return q;
}

// a / b in double-f32 for b.x > 0 (about 2^-47 relative), from the reciprocal of b.x
// (`xcm_recip`) and IEEE + - * alone, so every device gives the same bits: q = a.x / b.x to an
// ulp or two, and the remainder a - q b (a.x - q b.x exact, as q b.x is within a few ulps of
// a.x) times 1/b.x as its correction.
fn xcm_df_div(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let inv = xcm_recip(b.x);
    let q = a.x * inv;
    let p = xcm_two_prod(q, b.x);
    let rest = (((a.x - p.x) - p.y) + a.y) - q * b.y;
    return xcm_fast_two_sum(q, rest * inv);
}

// sqrt(a) in double-f32 for a.x > 0 normal (about 2^-47 relative), from `xcm_inverse_sqrt` (its
// integer search gives every device the same bits) and IEEE + - * alone: s = a.x / sqrt(a.x) to
// an ulp, and (a - s^2) / 2s (a.x - s^2 exact) as its correction, one Newton step.
fn xcm_df_sqrt(a: vec2<f32>) -> vec2<f32> {
    let t = xcm_inverse_sqrt(a.x);
    let s = a.x * t;
    let p = xcm_two_prod(s, s);
    let rest = ((a.x - p.x) - p.y) + a.y;
    return xcm_fast_two_sum(s, rest * (0.5 * t));
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
