// options: the Black-Scholes prices of a European call and put, one option per item, from its
// spot price, strike price and years to expiry, at one riskless rate and volatility (per year).
// exp and log are the math library's, correctly rounded, so every device gives the same bits.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
    rate: f32,
    volatility: f32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> spot: array<f32>;
@group(0) @binding(2) var<storage, read> strike: array<f32>;
@group(0) @binding(3) var<storage, read> years: array<f32>;
@group(0) @binding(4) var<storage, read_write> call: array<f32>;
@group(0) @binding(5) var<storage, read_write> put: array<f32>;

// The standard normal distribution function, by Abramowitz and Stegun's 26.2.17 (absolute
// error below 7.5e-8): 1 - phi(d) * (a polynomial in 1 / (1 + p |d|)) for d >= 0, where phi is
// the normal density, exp(-d^2 / 2) / sqrt(2 pi). d is taken within [-10, 10] (at the ends
// the function is within 8e-24 of 0 or 1): from |d| near 12.9 the tail's value is subnormal,
// which a device that flushes subnormals (llvmpipe) cannot compute, so its tiles would leave
// it; the margin keeps every value normal.
fn normal_cdf(d: f32) -> f32 {
    let x = clamp(d, -10.0, 10.0);
    let k = 1.0 / (1.0 + 0.2316419 * abs(x));
    let poly = k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))));
    let tail = 0.3989422804014327 * exp(-0.5 * x * x) * poly;
    return select(1.0 - tail, tail, x < 0.0);
}

@compute @workgroup_size(64)
fn options(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    let s = spot[i];
    let k = strike[i];
    let t = years[i];
    let v = tile.volatility * sqrt(t);
    let d1 = (log(s / k) + (tile.rate + 0.5 * tile.volatility * tile.volatility) * t) / v;
    let d2 = d1 - v;
    let discounted = k * exp(-tile.rate * t);
    call[i] = s * normal_cdf(d1) - discounted * normal_cdf(d2);
    put[i] = discounted * normal_cdf(-d2) - s * normal_cdf(-d1);
}
