//! Makes the example blocks from their WGSL with xcd-build: every form, the CPU form and the
//! typed calls, into OUT_DIR. A kernel outside the exact subset or the ABI fails the build with
//! its file, line and why.

fn main() {
    xcd_build::compile(&["wgsl/escape.wgsl", "wgsl/saxpy.wgsl", "wgsl/poly.wgsl"]);
}
