//! xcd-build as a build script uses it: errors point at the WGSL (`file:line:col` and why),
//! output is written once and left alone when nothing changed, and names are checked.

use std::path::{Path, PathBuf};

const GOOD: &str = r#"struct Tile { start: u32, count: u32, first: u32, k: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = y[i] * tile.k;
}
"#;

/// Writes `text` as `name` in `dir` and makes its block into `dir/out`; the error, if any.
fn make(dir: &Path, name: &str, text: &str) -> Result<PathBuf, String> {
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write the kernel");
    let out = dir.join("out");
    xcd_build::Builder::new().file(&file).out_dir(&out).generate().map_err(|e| e.to_string())?;
    Ok(out)
}

fn error_of(name: &str, text: &str) -> (String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let e = make(dir.path(), name, text).expect_err("the kernel is refused");
    (e, dir.path().join(name).display().to_string())
}

#[test]
fn a_good_kernel_makes_its_module_and_forms() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = make(dir.path(), "scale.wgsl", GOOD).expect("the kernel makes a block");
    let module = std::fs::read_to_string(out.join("xcd_blocks.rs")).expect("the module");
    // prettyplease decides where lines break, and puts a comma after the last element of a list
    // it broke: compare without whitespace and without that comma.
    let flat = module.split_whitespace().collect::<String>().replace(",)", ")");
    assert!(module.contains("pub mod scale {"), "{module}");
    assert!(flat.contains("pubfnrun(par:&::xcd_runtime::Par,n:u32,k:f32,y:&mut[f32])->"), "{module}");
    assert!(flat.contains("wire::ArrayRole::PerItem(wire::Access::InOut)"), "y is read, so inout: {module}");
    assert!(flat.contains(r#"include!(concat!(env!("OUT_DIR"),"/xcd-build/scale.rs"));"#), "{module}");
    let cpu = std::fs::read_to_string(out.join("xcd-build/scale.rs")).expect("the CPU form");
    assert!(cpu.contains("pub fn cpu(t: &mut ::xcd_runtime::CpuTile<'_>)"), "{cpu}");
    for ext in ["wgsl", "spv", "msl", "ptx", "rs"] {
        let form = out.join("xcd-build").join(format!("scale.{ext}"));
        assert!(std::fs::metadata(&form).is_ok_and(|m| m.len() > 0), "{} is written", form.display());
    }
}

#[test]
fn output_that_did_not_change_is_not_written_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = make(dir.path(), "scale.wgsl", GOOD).expect("first");
    let module = out.join("xcd_blocks.rs");
    let spv = out.join("xcd-build/scale.spv");
    let before =
        (std::fs::metadata(&module).and_then(|m| m.modified()), std::fs::metadata(&spv).and_then(|m| m.modified()));
    std::thread::sleep(std::time::Duration::from_millis(20));
    make(dir.path(), "scale.wgsl", GOOD).expect("second");
    let after =
        (std::fs::metadata(&module).and_then(|m| m.modified()), std::fs::metadata(&spv).and_then(|m| m.modified()));
    assert_eq!(format!("{before:?}"), format!("{after:?}"), "same kernel, same files, untouched");
    make(dir.path(), "scale.wgsl", &GOOD.replace("y[i] * tile.k", "y[i] * tile.k + 1.0")).expect("third");
    let changed = std::fs::metadata(&spv).and_then(|m| m.modified());
    assert_ne!(format!("{:?}", before.1), format!("{changed:?}"), "a changed kernel is written again");
}

#[test]
fn a_parse_error_points_at_its_line_and_column() {
    let (e, path) = error_of("scale.wgsl", &GOOD.replace("y[i] * tile.k;", "y[i] * ;"));
    assert!(e.starts_with(&format!("{path}:8:")), "file:line:col first: {e}");
    assert!(e.contains("expected"), "naga's message: {e}");
}

#[test]
fn a_construct_outside_the_exact_subset_points_at_its_line() {
    let (e, path) = error_of("scale.wgsl", &GOOD.replace("y[i] * tile.k", "mat2x2<f32>(y[i], 0.0, 0.0, 1.0)[0].x"));
    assert!(e.starts_with(&format!("{path}:8:")), "{e}");
    assert!(e.contains("a matrix type is not in the exact subset"), "{e}");
}

#[test]
fn an_abi_break_says_how() {
    let (e, path) = error_of("scale.wgsl", &GOOD.replace("@binding(1) var<storage", "@binding(2) var<storage"));
    assert!(e.starts_with(&format!("{path}:3:")), "{e}");
    assert!(
        e.contains("the kernel breaks the ABI: y is at @binding(2), but arrays bind in order from @binding(1)"),
        "{e}"
    );
    let headless = r#"struct Tile { k: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) gid: vec3<u32>) {
    y[gid.x] = y[gid.x] * tile.k;
}
"#;
    let (e, path) = error_of("scale.wgsl", headless);
    assert!(e.starts_with(&format!("{path}:2:")), "{e}");
    assert!(e.contains("a broken tile header") || e.contains("a missing tile header"), "{e}");
}

#[test]
fn the_entry_point_is_named_after_the_file() {
    let (e, path) = error_of("other.wgsl", GOOD);
    assert_eq!(e, format!("{path}: the WGSL has no compute entry point named other"));
}

#[test]
fn a_file_name_that_cannot_name_a_module_is_refused() {
    let (e, _) = error_of("my-scale.wgsl", GOOD);
    assert!(e.contains("\"my-scale\" is not a name: call the file NAME.wgsl"), "{e}");
}
