// poly: y = c[0] + c[1] x + … + c[terms-1] x^(terms-1) by Horner's rule; the coefficients are a
// whole array shared by every tile, x and y are per-item. Coefficients past the array read as 0.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
    terms: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> coef: array<f32>; // xcd: whole
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn poly(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    let v = x[i];
    let len = arrayLength(&coef);
    var acc = 0.0;
    var k = tile.terms;
    loop {
        if (k == 0u) {
            break;
        }
        k = k - 1u;
        var c = 0.0;
        if (k < len) {
            c = coef[k];
        }
        acc = acc * v + c;
    }
    y[i] = acc;
}
