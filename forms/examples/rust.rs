//! Prints a WGSL kernel's CPU form (Rust): `cargo run -p xcd-forms --example rust -- FILE ENTRY`.
fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(entry)) = (args.next(), args.next()) else {
        eprintln!("usage: rust FILE.wgsl ENTRY");
        std::process::exit(64);
    };
    let wgsl = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    match xcd_forms::Kernel::from_wgsl(&wgsl, &entry).and_then(|k| k.rust(&vec![true; k.interface().arrays.len()])) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(65);
        }
    }
}
