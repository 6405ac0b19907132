// exp2 on vectors: each vec4<f32> of x, componentwise.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;

@compute @workgroup_size(64)
fn exp2_4(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    y[i] = exp2(x[i]);
}
