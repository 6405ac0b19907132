//! The options block, from its WGSL alone.

fn main() {
    xcd_build::compile(&["wgsl/options.wgsl"]);
}
