//! The blur block, from its WGSL alone.

fn main() {
    xcd_build::compile(&["wgsl/blur.wgsl"]);
}
