// The natural logarithm to about 2^-114, in 128-bit fixed point: what `pow` decides its hardest
// roundings with (pow.wgsl). Values are signed 128-bit integers in two's complement as four u32
// words (most significant first) times 2^-120, so from -128 to 128 in steps of 2^-120. Every
// operation here is on integers, so every device gives the same bits.

// a + b (mod 2^128).
fn xcm_add128(a: vec4<u32>, b: vec4<u32>) -> vec4<u32> {
    let w = a.w + b.w;
    let z0 = a.z + b.z;
    let z = z0 + u32(w < a.w);
    let y0 = a.y + b.y;
    let y = y0 + u32(z0 < a.z) + u32(z < z0);
    let carry = u32(y0 < a.y) + u32(y < y0);
    return vec4<u32>(a.x + b.x + carry, y, z, w);
}

// -a (mod 2^128).
fn xcm_neg128(a: vec4<u32>) -> vec4<u32> {
    return xcm_add128(~a, vec4<u32>(0u, 0u, 0u, 1u));
}

// a >> n for n < 128, shifting in zeros.
fn xcm_shr128(a: vec4<u32>, n: u32) -> vec4<u32> {
    var v = a;
    var left = n;
    while (left >= 32u) {
        v = vec4<u32>(0u, v.x, v.y, v.z);
        left = left - 32u;
    }
    if (left == 0u) {
        return v;
    }
    let back = 32u - left;
    return vec4<u32>(v.x >> left, (v.y >> left) | (v.x << back), (v.z >> left) | (v.y << back), (v.w >> left) | (v.z << back));
}

// The low 128 bits of a * s (a unsigned).
fn xcm_mul128_u32(a: vec4<u32>, s: u32) -> vec4<u32> {
    let p0 = xcm_mul32(a.x, s);
    let p1 = xcm_mul32(a.y, s);
    let p2 = xcm_mul32(a.z, s);
    let p3 = xcm_mul32(a.w, s);
    let z = p2.y + p3.x;
    let y0 = p1.y + p2.x;
    let y = y0 + u32(z < p2.y);
    let carry = u32(y0 < p1.y) + u32(y < y0);
    return vec4<u32>(p0.y + p1.x + carry, y, z, p3.y);
}

// (a * s) >> 33 for a unsigned below 2^127, truncated: a times r = s 2^-33.
fn xcm_mul128_r(a: vec4<u32>, s: u32) -> vec4<u32> {
    let p0 = xcm_mul32(a.x, s);
    let p1 = xcm_mul32(a.y, s);
    let p2 = xcm_mul32(a.z, s);
    let p3 = xcm_mul32(a.w, s);
    // The top 128 bits of the 160-bit product, then one more bit off.
    let w = p3.x + p2.y;
    let z0 = p2.x + p1.y;
    let z = z0 + u32(w < p3.x);
    let y0 = p1.x + p0.y;
    let y = y0 + u32(z0 < p2.x) + u32(z < z0);
    let x = p0.x + u32(y0 < p1.x) + u32(y < y0);
    return xcm_shr128(vec4<u32>(x, y, z, w), 1u);
}

// 1/k in the fixed point (2^120 / k, truncated), for 0 < k < 2^16: long division by 16-bit
// digits, each step's dividend below 2^32.
fn xcm_inv128(k: u32) -> vec4<u32> {
    var rem = 0u;
    var q = vec4<u32>(0u, 0u, 0u, 0u);
    for (var d = 0u; d < 8u; d = d + 1u) {
        // 2^120 is 0x100 in the top digit.
        let cur = (rem << 16u) | select(0u, 0x100u, d == 0u);
        let digit = cur / k;
        rem = cur - digit * k;
        q[d >> 1u] = q[d >> 1u] | (digit << select(0u, 16u, (d & 1u) == 0u));
    }
    return q;
}

// ln(n 2^s) in the fixed point, for n of 1 to 32 bits (not 0), the result within 2^-114 or so (ln2 times e),
// for |ln| below 128. With n normalized to 25 bits, m = n 2^-24 in [1, 2), halved from 1.5 up
// (h = 1): m in [0.75, 1.5), and ln(n 2^s) = (s + 24 + h + shift) ln2 + ln(m). Then
// - i = round(32 m) in [24, 48], c = round(8192 / i), so m c / 256 = 1 + r, |r| < 0.021, r
//   exact as R 2^-33 (R below 2^28): ln(m) = ln(256/c) (a table; 0 where m is near 1, so its
//   relative precision stays) + ln(1 + r);
// - ln(1 + r) = r (1 - r (1/2 - r (1/3 - ...))) to r^22 (the next term is below 2^-122).
fn xcm_ln128(n: u32, s: i32) -> vec4<u32> {
    let lz = countLeadingZeros(n);
    // n normalized to [2^24, 2^25): shifted left (or right, dropping only zeros: n < 2^25
    // unless it came with more bits, which the callers' do not).
    var m = n;
    if (lz >= 7u) {
        m = n << (lz - 7u);
    } else {
        m = n >> (7u - lz);
    }
    let h = u32(m >= 0x1800000u);
    let e = s + 31 - i32(lz) + i32(h);
    let i = (m + (1u << (18u + h))) >> (19u + h);
    let c = (8192u + (i >> 1u)) / i;
    // 1 + r = m c 2^(1 - h) 2^-33: R = that product - 2^33, as a sign and |R|.
    let p = xcm_mul32(m << (1u - h), c);
    let below = p.x < 2u;
    let r = select(p.y, 0u - p.y, below);
    // The loop's bound is not a constant (`top` is 22 for every argument), so that a shader
    // compiler keeps one loop rather than 21 copies of it: llvmpipe's compiles every call
    // site of `pow` anew, and a kernel calling it in a few places otherwise takes it minutes.
    let top = 22u + u32(s == 0x7fffffff);
    var poly = xcm_inv128(top);
    for (var k = top - 1u; k >= 1u; k = k - 1u) {
        let t = xcm_mul128_r(poly, r);
        poly = xcm_add128(xcm_inv128(k), select(xcm_neg128(t), t, below));
    }
    var l1p = xcm_mul128_r(poly, r);
    if (below) {
        l1p = xcm_neg128(l1p);
    }
    // ln(256/c) for i = 24 .. 48 (scripts/mathlib-tables pow).
    var table = array<vec4<u32>, 25>(
        vec4<u32>(0xffb69a7fu, 0xbc822718u, 0x43ddb15cu, 0x1d7a773fu),
        vec4<u32>(0xffc08dcfu, 0x254383aau, 0xe5557327u, 0x90d65a6cu),
        vec4<u32>(0xffcae826u, 0x06efa1ceu, 0x7a30de46u, 0x30e7abaau),
        vec4<u32>(0xffd4d98eu, 0x4ccfbef4u, 0x59748aaau, 0x2b5f3a9fu),
        vec4<u32>(0xffdd70f4u, 0xf7317aa7u, 0x2ebbf60eu, 0x2c07c642u),
        vec4<u32>(0xffe73cbau, 0x29ce64dfu, 0x0a534bd5u, 0x9a1254bdu),
        vec4<u32>(0xffef8a67u, 0xca671b8eu, 0xcfe4b599u, 0x87749017u),
        vec4<u32>(0xfff81f59u, 0x3c61f33fu, 0xecc1c0fbu, 0x0e10dd60u),
        vec4<u32>(0x00000000u, 0x00000000u, 0x00000000u, 0x00000000u),
        vec4<u32>(0x000820aeu, 0xc4f3a222u, 0x380b9e3au, 0xea6c444fu),
        vec4<u32>(0x000f7518u, 0xe0035c3du, 0xd83606d8u, 0x9093278bu),
        vec4<u32>(0x001700d3u, 0x0aeac0e0u, 0xf46d4cefu, 0x69917d84u),
        vec4<u32>(0x001da727u, 0x638446a2u, 0x5007e9c5u, 0xccc062fbu),
        vec4<u32>(0x0025a2c2u, 0x190d0273u, 0xad997036u, 0x941a8221u),
        vec4<u32>(0x002b7e80u, 0xd6a87b63u, 0xf70525d9u, 0xf9040c5bu),
        vec4<u32>(0x0032b4b5u, 0xb9ee02feu, 0x450b141fu, 0xede8f430u),
        vec4<u32>(0x0038dff7u, 0x8de01ee1u, 0x38d3a69du, 0x42dada1eu),
        vec4<u32>(0x003f3238u, 0xd96766f2u, 0xfb328337u, 0xcc050c6eu),
        vec4<u32>(0x0045ad73u, 0x2eb3edcdu, 0x66fbd28bu, 0x409352c6u),
        vec4<u32>(0x004afbc1u, 0xf3724d4eu, 0x7d252802u, 0x79f7831au),
        vec4<u32>(0x0051c637u, 0x09c7106cu, 0x18fb4c14u, 0xc56eeec0u),
        vec4<u32>(0x005756f7u, 0x7d657cbeu, 0x9abeeb73u, 0x4475d89eu),
        vec4<u32>(0x005d0761u, 0xdb19eec5u, 0x84a4ee30u, 0x59582cd3u),
        vec4<u32>(0x0062d8e6u, 0xa22cb7d2u, 0x8f0d0c7du, 0xc7cfcf79u),
        vec4<u32>(0x00674cafu, 0xa857b4ecu, 0x30f7979fu, 0xa7c30d6bu),
    );
    // e ln2, |e| <= 200.
    let ln2 = vec4<u32>(0x00b17217u, 0xf7d1cf79u, 0xabc9e3b3u, 0x9803f2f7u);
    var scaled = xcm_mul128_u32(ln2, u32(abs(e)));
    if (e < 0) {
        scaled = xcm_neg128(scaled);
    }
    return xcm_add128(xcm_add128(table[i - 24u], l1p), scaled);
}

// Whether |x|^y > M for M = mn 2^ms (a midpoint of the f32 grid: mn of at most 25 bits), for
// x positive, finite and not 1 and y finite with |y| in [2^-34, 2^31): the sign of
// y ln(x) - ln(M), each within about 2^-90 (x^y is not M itself: the exact results are
// computed before). Both values lie well inside the fixed point's range (|y ln x| below 105).
fn xcm_pow_above(x: f32, y: f32, mn: u32, ms: i32) -> bool {
    // ln(x), then ln(M), from one call in a loop (its bound not a constant, as in `xcm_ln128`):
    // one copy of the logarithm in the compiled kernel, not two.
    let ux = xcm_unpack(bitcast<u32>(x));
    var lx = vec4<u32>(0u, 0u, 0u, 0u);
    var lm = lx;
    for (var j = 0u; j < 2u + u32(mn == 0u); j = j + 1u) {
        let l = xcm_ln128(select(mn, u32(ux.x), j == 0u), select(ms, ux.y - 23, j == 0u));
        if (j == 0u) {
            lx = l;
        } else {
            lm = l;
        }
    }
    let negative = (lx.x >> 31u) == 1u;
    if (negative) {
        lx = xcm_neg128(lx);
    }
    // y = Y 2^q with Y odd.
    let uy = xcm_unpack(bitcast<u32>(abs(y)));
    let tz = countTrailingZeros(u32(uy.x));
    let big = u32(uy.x) >> tz;
    let q = uy.y - 23 + i32(tz);
    var prod: vec4<u32>;
    if (q >= 0) {
        prod = xcm_mul128_u32(lx, big << u32(q));
    } else {
        prod = xcm_mul128_u32(xcm_shr128(lx, u32(-q)), big);
    }
    if (negative != (y < 0.0)) {
        prod = xcm_neg128(prod);
    }
    let d = xcm_add128(prod, xcm_neg128(lm));
    return (d.x >> 31u) == 0u && (d.x | d.y | d.z | d.w) != 0u;
}
