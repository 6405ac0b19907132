//! Writes a WGSL kernel's SPIR-V form to standard output, as a device gets it:
//! `cargo run -p xcd-forms --example spirv -- FILE ENTRY [zero-inf-nan] [denorms] [loops] [subnormals]`.
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(entry)) = (args.first(), args.get(1)) else {
        eprintln!("usage: spirv FILE.wgsl ENTRY [zero-inf-nan] [denorms] [loops] [subnormals]");
        std::process::exit(64);
    };
    let has = |flag: &str| args.iter().skip(2).any(|a| a == flag);
    let options = xcd_forms::SpirvOptions {
        preserve_signed_zero_inf_nan: has("zero-inf-nan"),
        preserve_denorms: has("denorms"),
        guard_loops: has("loops"),
        guard_subnormals: has("subnormals"),
        opaque_constants: has("opaque"),
    };
    let wgsl = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    match xcd_forms::Kernel::from_wgsl(&wgsl, entry).and_then(|k| k.spirv_for(options)) {
        Ok(words) => {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let _ = std::io::stdout().write_all(&bytes);
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(65);
        }
    }
}
