// escape: iterate each pixel of a width×height image until it escapes (the tutorial's block).
// Arithmetic as the tutorial writes it, every operation rounded on its own, left to right.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
    width: u32,
    height: u32,
    max_iter: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read_write> counts: array<u32>;

@compute @workgroup_size(64)
fn escape(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    let item = tile.start + i;
    let cx = f32(item % tile.width) * 3.0 / f32(tile.width) - 2.0;
    let cy = f32(item / tile.width) * 3.0 / f32(tile.height) - 1.5;
    var x = 0.0;
    var y = 0.0;
    var n = 0u;
    loop {
        if (!(n < tile.max_iter && x * x + y * y < 4.0)) {
            break;
        }
        let t = x * x - y * y + cx;
        y = 2.0 * x * y + cy;
        x = t;
        n = n + 1u;
    }
    counts[i] = n;
}
