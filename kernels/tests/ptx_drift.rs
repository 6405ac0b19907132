//! The committed PTX in `ptx/` must be what `cuda/make-ptx.sh` makes from the CUDA C twins.
//! Runs wherever clang exists (CI installs it); fails on any drift.

use std::path::Path;
use std::process::Command;

fn clang_present() -> bool {
    ["clang-14", "clang"].iter().any(|c| Command::new(c).arg("--version").output().is_ok_and(|o| o.status.success()))
}

#[test]
fn committed_ptx_matches_its_cuda_twin() {
    if !clang_present() {
        assert!(std::env::var_os("CI").is_none(), "CI installs clang, so the PTX drift check must run there");
        eprintln!("skipped: no clang here to regenerate the PTX");
        return;
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("xc-ptx-{}", std::process::id()));
    let status =
        Command::new("bash").arg(crate_dir.join("cuda/make-ptx.sh")).arg(&out).status().expect("make-ptx.sh runs");
    assert!(status.success(), "make-ptx.sh failed");
    let mut checked = 0;
    for entry in std::fs::read_dir(crate_dir.join("cuda")).expect("cuda/ lists") {
        let path = entry.expect("an entry").path();
        if path.extension().is_none_or(|e| e != "cu") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a file name");
        let made = std::fs::read_to_string(out.join(format!("{name}.ptx"))).expect("made PTX");
        let committed = std::fs::read_to_string(crate_dir.join(format!("ptx/{name}.ptx")))
            .unwrap_or_else(|_| panic!("ptx/{name}.ptx is not committed: run kernels/cuda/make-ptx.sh"));
        assert!(
            made == committed,
            "ptx/{name}.ptx differs from what its CUDA twin makes: run kernels/cuda/make-ptx.sh and commit"
        );
        checked += 1;
    }
    assert_eq!(checked, 3, "expected escape, saxpy and poly");
    let _ = std::fs::remove_dir_all(&out);
}

/// Every PTX form keeps float operations separately rounded, with IEEE division and no
/// flush-to-zero, which is what makes CUDA results equal to the CPU's.
#[test]
fn committed_ptx_has_no_contraction_or_fast_math() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["escape", "saxpy", "poly"] {
        let ptx = std::fs::read_to_string(crate_dir.join(format!("ptx/{name}.ptx"))).expect("committed PTX");
        for banned in ["fma.rn.f32", "mad.f32", "div.approx", "div.full", ".ftz"] {
            assert!(!ptx.contains(banned), "ptx/{name}.ptx contains {banned}");
        }
    }
    let escape = std::fs::read_to_string(crate_dir.join("ptx/escape.ptx")).expect("committed PTX");
    assert!(escape.contains("div.rn.f32"), "escape divides with div.rn");
}
