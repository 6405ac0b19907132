// blur: one pass of a 3×3 box blur over a width×height image, blended into the picture so far:
// out = out * (1 - amount) + amount * (the mean of image's 3×3 neighbourhood), edges clamped.
// image is a whole array: an item reads pixels of its neighbours, which other tiles own.
// out is read and written (xcd-build sees the kernel load it, so it is input-output).
struct Tile {
    start: u32,
    count: u32,
    first: u32,
    width: u32,
    height: u32,
    amount: f32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> image: array<f32>; // xcd: whole
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

// The pixel at p, with p clamped to the image.
fn pixel(p: vec2<i32>) -> f32 {
    let size = vec2<i32>(i32(tile.width), i32(tile.height));
    let q = vec2<u32>(clamp(p, vec2<i32>(0, 0), size - vec2<i32>(1, 1)));
    return image[q.y * tile.width + q.x];
}

@compute @workgroup_size(64)
fn blur(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    let item = tile.start + i;
    let p = vec2<i32>(i32(item % tile.width), i32(item / tile.width));
    var sum = 0.0;
    for (var dy = -1; dy <= 1; dy++) {
        for (var dx = -1; dx <= 1; dx++) {
            sum = sum + pixel(p + vec2<i32>(dx, dy));
        }
    }
    out[i] = out[i] * (1.0 - tile.amount) + tile.amount * (sum / 9.0);
}
