//! Prints generated kernel SEED as WGSL: `cargo run -p xcd-ptxsim --example kernel -- SEED`.
fn main() {
    let seed = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    print!("{}", xcd_ptxsim::kernelgen::generate(seed).wgsl());
}
