//! Prints a WGSL kernel's PTX form: `cargo run -p xcd-forms --example ptx -- FILE ENTRY`.
fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(path), Some(entry)) = (args.next(), args.next()) else {
        eprintln!("usage: ptx FILE.wgsl ENTRY");
        std::process::exit(64);
    };
    let wgsl = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    match xcd_forms::Kernel::from_wgsl(&wgsl, &entry).and_then(|k| k.ptx()) {
        Ok(ptx) => print!("{ptx}"),
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(65);
        }
    }
}
