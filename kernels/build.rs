//! Makes the SPIR-V, MSL and PTX forms of every kernel in `wgsl/` with xcd-forms, into OUT_DIR.
//! A kernel outside the exact subset or the ABI fails the build with its line and why.

use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in ["escape", "saxpy", "poly"] {
        let path = format!("wgsl/{name}.wgsl");
        println!("cargo::rerun-if-changed={path}");
        let wgsl = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
        let forms = xcd_forms::make_forms(&wgsl, name).unwrap_or_else(|e| panic!("{path}: {e}"));
        let spirv: Vec<u8> = forms.spirv.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(out.join(format!("{name}.spv")), spirv).expect("write SPIR-V");
        std::fs::write(out.join(format!("{name}.msl")), forms.msl).expect("write MSL");
        std::fs::write(out.join(format!("{name}.ptx")), forms.ptx).expect("write PTX");
    }
}
