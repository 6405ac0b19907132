//! `xcrun block`: an example block by name, and any WGSL kernel's description derived from the
//! kernel, as xcd-build derives it.

use std::path::Path;
use std::process::{Command, Output};

fn xcrun(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xcrun")).args(args).output().expect("xcrun runs")
}

fn kernel(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels/wgsl").join(name).display().to_string()
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_kernel_file_describes_the_same_block_as_the_example() {
    for name in ["escape", "saxpy", "poly"] {
        let from_file = stdout(&xcrun(&["block", "--wgsl", &kernel(&format!("{name}.wgsl")), "--id"]));
        let example = stdout(&xcrun(&["block", name, "--wgsl", "--id"]));
        assert_eq!(from_file, example, "{name}: the file's block and the example's differ");
    }
    let out = xcrun(&["block", "--wgsl", &kernel("poly.wgsl")]);
    let id = stdout(&xcrun(&["block", "poly", "--wgsl", "--id"]));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), format!("xcrun: block poly has id {id}"));
    let json = stdout(&out);
    let desc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(desc["arrays"][1]["role"], "whole", "the // xcd: whole mark: {json}");
    assert_eq!(desc["forms"]["ptx"], serde_json::Value::Null, "only the WGSL is carried: {json}");
}

#[test]
fn marks_on_the_command_line_change_the_roles() {
    let json = stdout(&xcrun(&["block", "--wgsl", &kernel("saxpy.wgsl"), "--whole", "x", "--out", "y"]));
    let desc: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(desc["arrays"][0]["role"], "whole", "{json}");
    assert_eq!(desc["arrays"][1]["role"]["per_item"], "out", "{json}");
    let out = xcrun(&["block", "--wgsl", &kernel("saxpy.wgsl"), "--whole", "nothing"]);
    assert_eq!(out.status.code(), Some(65));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nothing is marked whole, but the kernel binds no array of that name (it binds x, y)"),
        "{stderr}"
    );
}

#[test]
fn a_broken_kernel_is_refused_with_its_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("saxpy.wgsl");
    let text = std::fs::read_to_string(kernel("saxpy.wgsl"))
        .expect("saxpy")
        .replace("tile.a * x[i]", "mat2x2<f32>(x[i], 0.0, 0.0, 1.0)[0].x");
    std::fs::write(&file, text).expect("write");
    let out = xcrun(&["block", "--wgsl", &file.display().to_string()]);
    assert_eq!(out.status.code(), Some(65));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 19:12: a matrix type is not in the exact subset"), "{stderr}");
    let out = xcrun(&["block", "--wgsl", "/nonexistent/k.wgsl"]);
    assert_eq!(out.status.code(), Some(66));
}
