//! Tidy checks: the project's written rules, enforced inside `cargo test`.

use xcd_e2e::{files, relative};

/// The only files allowed to hold `unsafe` code: where a GPU API forces it, and the stand-in
/// driver library (`fakecuda/`), whose C entry points take raw pointers.
const UNSAFE_ALLOWED: &[&str] = &[
    "engine/src/wgpu_backend/mod.rs",
    "engine/src/vulkan_hal.rs",
    "engine/src/cuda_backend/mod.rs",
    "engine/src/cuda_backend/context.rs",
    "engine/src/cuda_backend/discover.rs",
    "engine/src/cuda_backend/live.rs",
    "engine/src/cuda_backend/run.rs",
    "fakecuda/src/lib.rs",
    "fakecuda/src/exports/mod.rs",
    "fakecuda/src/exports/device.rs",
    "fakecuda/src/exports/context.rs",
    "fakecuda/src/exports/memory.rs",
    "fakecuda/src/exports/work.rs",
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
fn locks_are_parking_lot_s_which_cannot_poison() {
    // std's locks poison when a holder panics, and each use then had to decide what that
    // means (85 copies of the same `unwrap_or_else(|e| e.into_inner())`); parking_lot's do not.
    let std_lock = ["std::sync::Mutex", "std::sync::RwLock", "std::sync::Condvar", "e.into_inner())"];
    let mut offenders = Vec::new();
    for path in files(".", ".rs") {
        let rel = relative(&path);
        let text = std::fs::read_to_string(&path).expect("readable source");
        let imports_one = text
            .lines()
            .any(|l| l.starts_with("use std::sync::{") && ["Mutex", "RwLock", "Condvar"].iter().any(|n| l.contains(n)));
        if rel != "e2e/tests/tidy.rs" && (imports_one || std_lock.iter().any(|p| text.contains(p))) {
            offenders.push(rel);
        }
    }
    assert!(offenders.is_empty(), "std locks (use parking_lot's): {offenders:?}");
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

/// The longest a non-test function may be, from its `fn` line to its closing brace.
const FUNCTION_LINES: usize = 70;

/// The non-test functions of a rustfmt-formatted source over `limit` lines, as `(name, lines)`.
/// A function ends at the first line after its signature that is its indent plus `}`; items
/// under `#[cfg(test)]` are skipped the same way.
fn long_functions(text: &str, limit: usize) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let end_of = |from: usize, width: usize| {
        (from + 1..lines.len()).find(|&k| indent(lines[k]) == width && lines[k].trim() == "}").unwrap_or(lines.len())
    };
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        if line.starts_with("#[cfg(test)]") {
            i = end_of(i + 1, lines.get(i + 1).map_or(0, |l| indent(l))) + 1;
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().take_while(|w| *w != "fn").collect();
        let is_fn = line.contains("fn ")
            && words.iter().all(|w| ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe"].contains(w))
            && line.split_whitespace().nth(words.len()) == Some("fn");
        if is_fn {
            let body = (i..lines.len()).find(|&k| {
                let l = lines[k].trim_end();
                l.ends_with('{') || l.ends_with(';') || l.ends_with('}')
            });
            if let Some(open) = body.filter(|&k| lines[k].trim_end().ends_with('{')) {
                let end = end_of(open, indent(lines[i]));
                let name = line.split("fn ").nth(1).unwrap_or("").split(['(', '<']).next().unwrap_or("").to_owned();
                if end + 1 - i > limit {
                    found.push((name, end + 1 - i));
                }
            }
        }
        i += 1;
    }
    found
}

#[test]
fn functions_read_in_one_sitting() {
    let mut long = Vec::new();
    for path in files(".", ".rs") {
        let rel = relative(&path);
        if rel.split('/').any(|part| part == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        for (name, lines) in long_functions(&text, FUNCTION_LINES) {
            long.push(format!("{rel}: {name} ({lines} lines)"));
        }
    }
    assert!(
        long.is_empty(),
        "non-test functions past {FUNCTION_LINES} lines do several jobs; split them into named steps: {long:#?}"
    );
}

#[test]
fn the_checks_find_what_they_look_for() {
    let body = |n: usize| (0..n).map(|_| "    x();\n").collect::<String>();
    let text = format!(
        "pub(crate) fn long() {{\n{}}}\n\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{}    }}\n}}\nfn short() {{\n}}\n",
        body(81),
        body(200)
    );
    assert_eq!(long_functions(&text, FUNCTION_LINES), [("long".to_owned(), 83)]);
    let graph = module_edges(&[
        ("a.rs", "use crate::b::X;\n"),
        ("b/mod.rs", "use crate::c::Y;\nfn f() { crate::a::g() }\n"),
        ("c.rs", "use super::x;\n"),
    ]);
    assert_eq!(cycles(&graph), [vec!["a".to_owned(), "b".to_owned()]]);
}

/// Each top-level module of a crate and the top-level modules its files name as `crate::m`.
fn module_edges(files: &[(&str, &str)]) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let top = |path: &str| path.split('/').next().unwrap_or(path).trim_end_matches(".rs").to_owned();
    let modules: std::collections::BTreeSet<String> =
        files.iter().map(|(p, _)| top(p)).filter(|m| m != "lib" && m != "main").collect();
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for (path, text) in files {
        let from = top(path);
        if !modules.contains(&from) {
            continue;
        }
        let code = without_tests_and_comments(text);
        let named = code.split("crate::").skip(1).filter_map(|rest| {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            modules.contains(&name).then_some(name)
        });
        for to in named.filter(|to| *to != from) {
            edges.entry(from.clone()).or_default().insert(to);
        }
    }
    edges
}

/// A source without its comments and its `#[cfg(test)]` items (rustfmt-formatted).
fn without_tests_and_comments(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut kept = String::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("#[cfg(test)]") {
            let item = i + 1;
            let width = lines.get(item).map_or(0, |l| indent(l));
            let one_line = lines.get(item).is_some_and(|l| l.trim_end().ends_with(';'));
            i = if one_line {
                item + 1
            } else {
                (item + 1..lines.len())
                    .find(|&k| indent(lines[k]) == width && lines[k].trim() == "}")
                    .map_or(lines.len(), |k| k + 1)
            };
            continue;
        }
        if !line.trim_start().starts_with("//") {
            kept.push_str(line);
            kept.push('\n');
        }
        i += 1;
    }
    kept
}

/// The pairs of modules that name each other, directly or through others, as `[a, b]` sorted.
fn cycles(edges: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>) -> Vec<Vec<String>> {
    let reaches = |from: &str, to: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut pending = vec![from.to_owned()];
        while let Some(m) = pending.pop() {
            for next in edges.get(&m).into_iter().flatten() {
                if next == to {
                    return true;
                }
                if seen.insert(next.clone()) {
                    pending.push(next.clone());
                }
            }
        }
        false
    };
    let mut found = Vec::new();
    for (a, outs) in edges {
        for b in outs {
            if a < b && reaches(b, a) {
                found.push(vec![a.clone(), b.clone()]);
            }
        }
    }
    found
}

#[test]
fn no_module_cycles_inside_a_crate() {
    let mut problems = Vec::new();
    for manifest in files(".", "Cargo.toml") {
        let Some(crate_dir) = manifest.parent() else { continue };
        let src = crate_dir.join("src");
        if !src.is_dir() || relative(crate_dir).starts_with("fuzz") {
            continue;
        }
        let sources: Vec<(String, String)> = files(&relative(&src), ".rs")
            .into_iter()
            .filter_map(|p| {
                let inside = p.strip_prefix(&src).ok()?.display().to_string();
                Some((inside, std::fs::read_to_string(&p).ok()?))
            })
            .collect();
        let borrowed: Vec<(&str, &str)> = sources.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
        for pair in cycles(&module_edges(&borrowed)) {
            problems.push(format!("{}: {} and {} use each other", relative(crate_dir), pair[0], pair[1]));
        }
    }
    assert!(problems.is_empty(), "module cycles (one module should own the shared part): {problems:#?}");
}
