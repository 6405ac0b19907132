// saxpy: y = a * x + y, per-item input x, per-item input-output y, scalar parameter a.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
    a: f32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn saxpy(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    y[i] = tile.a * x[i] + y[i];
}
