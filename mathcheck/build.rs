//! Makes the math library's test blocks (one builtin each, on f32 and on vec4<f32>) with
//! xcd-build, so that their CPU form is the one every kernel gets.

fn main() {
    xcd_build::compile(&["wgsl/exp1.wgsl", "wgsl/exp4.wgsl", "wgsl/exp2_1.wgsl", "wgsl/exp2_4.wgsl"]);
}
