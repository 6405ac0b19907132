//! Tidy checks: the project's written rules, enforced inside `cargo test`.

use xcd_e2e::{files, relative};

/// The only files allowed to hold `unsafe` code: where a GPU API forces it.
const UNSAFE_ALLOWED: &[&str] = &[
    "engine/src/wgpu_backend/mod.rs",
    "engine/src/vulkan_hal.rs",
    "engine/src/cuda_backend/mod.rs",
    "engine/src/cuda_backend/discover.rs",
    "engine/src/cuda_backend/run.rs",
];

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let sources = files(".", ".rs");
    assert!(sources.len() > 20, "found only {} Rust files: is the repository root right?", sources.len());
    let mut missing = Vec::new();
    for path in sources {
        let text = std::fs::read_to_string(&path).expect("readable source");
        if !text.trim_start().starts_with("//!") {
            missing.push(relative(&path));
        }
    }
    assert!(missing.is_empty(), "files without a //! doc saying what they own: {missing:?}");
}

#[test]
fn unsafe_code_stays_in_the_gpu_backends() {
    let mut offenders = Vec::new();
    for path in files(".", ".rs") {
        let rel = relative(&path);
        if UNSAFE_ALLOWED.contains(&rel.as_str()) || rel.starts_with("e2e/") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        if text.lines().any(|l| l.contains("unsafe {") || l.contains("unsafe fn") || l.contains("allow(unsafe_code)")) {
            offenders.push(rel);
        }
    }
    assert!(offenders.is_empty(), "unsafe code outside {UNSAFE_ALLOWED:?}: {offenders:?}");
}

#[test]
fn members_take_versions_and_lints_from_the_workspace() {
    let manifests = files(".", "Cargo.toml");
    assert!(manifests.len() > 5, "found only {} manifests", manifests.len());
    let mut problems = Vec::new();
    for path in manifests {
        let rel = relative(&path);
        // The root, and fuzz/, which cargo fuzz needs as a workspace of its own (its manifest
        // says why; it takes our crates by path and only libfuzzer-sys and serde_json besides).
        if rel == "Cargo.toml" || rel == "fuzz/Cargo.toml" {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable manifest");
        if !text.contains("[lints]\nworkspace = true") {
            problems.push(format!("{rel}: no [lints] workspace = true"));
        }
        let mut section = String::new();
        for line in text.lines() {
            if line.starts_with('[') {
                section = line.to_owned();
            } else if section.contains("dependencies") && line.contains('=') && !line.contains("workspace = true") {
                problems.push(format!("{rel}: {line:?} pins a version outside [workspace.dependencies]"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn large_files_are_split() {
    let big: Vec<String> = files(".", ".rs")
        .into_iter()
        .filter(|p| std::fs::metadata(p).map(|m| m.len() > 30_000).unwrap_or(false))
        .map(|p| relative(&p))
        .collect();
    assert!(big.is_empty(), "files past 30 KB read badly in one sitting; split them: {big:?}");
}
