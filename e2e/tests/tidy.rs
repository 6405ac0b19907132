//! Tidy checks: the project's written rules, enforced inside `cargo test`.

use xcd_e2e::{files, relative, repo_root};

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

/// The body of `item` (`struct Inner {`, `pub enum RunError {`) in a rustfmt-formatted source:
/// its lines up to the closing brace at its indent.
fn item_body<'t>(text: &'t str, item: &str) -> Vec<&'t str> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines.iter().position(|l| l.trim_start().starts_with(item)) else { return Vec::new() };
    let indent = lines[start].len() - lines[start].trim_start().len();
    lines[start + 1..]
        .iter()
        .take_while(|l| !(l.len() - l.trim_start().len() == indent && l.trim() == "}"))
        .copied()
        .collect()
}

/// A file of the repository, by its path from the root.
fn source(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_daemon_s_state_keeps_its_rooms_behind_methods() {
    // `AppState(pub(crate) Arc<Inner>)` with 12 open fields was reached through 58 `.0.` chains.
    let state = source("api/src/state/mod.rs");
    assert!(state.contains("pub struct AppState(Arc<Inner>);"), "AppState's one field is private");
    let rooms = [
        ("api/src/state/mod.rs", "struct Inner {"),
        ("api/src/state/secret.rs", "pub(crate) struct SecretCheck {"),
        ("api/src/state/limits.rs", "pub(crate) struct Budgets {"),
        ("api/src/state/blocks.rs", "pub(crate) struct BlockStore {"),
        ("api/src/state/blocks.rs", "pub(crate) struct Registration<'s> {"),
        ("api/src/state/streams.rs", "pub(crate) struct Streams {"),
        ("api/src/state/devices.rs", "pub(crate) struct DeviceSet {"),
    ];
    let mut open = Vec::new();
    for (path, item) in rooms {
        let text = source(path);
        let body = item_body(&text, item);
        assert!(!body.is_empty(), "{path}: {item} is where this check looks");
        open.extend(body.iter().filter(|l| l.trim_start().starts_with("pub")).map(|l| format!("{path}: {}", l.trim())));
    }
    assert!(open.is_empty(), "a room's fields are its own; add a method instead: {open:#?}");
    let mut chains = Vec::new();
    for path in files("api/src", ".rs") {
        let rel = relative(&path);
        if rel.starts_with("api/src/state/") {
            continue;
        }
        let text = without_tests_and_comments(&source(&rel));
        chains.extend(
            text.lines()
                .filter(|l| l.contains("state.0.") || l.contains("self.0.0."))
                .map(|l| format!("{rel}: {}", l.trim())),
        );
    }
    assert!(chains.is_empty(), "reach the daemon's state through its rooms' methods: {chains:#?}");
}

#[test]
fn run_errors_are_types_not_sentences() {
    // `RunError::Settings(String)`, `NoWorkers(String)`, `Failed { reasons: String }`, the
    // placement's `Result<String, String>` and `Backend::recover`'s `Result<(), String>` were
    // sentences a caller could only print.
    let enums = [
        ("runtime/src/lib.rs", "pub enum RunError {"),
        ("runtime/src/roster.rs", "pub enum NoWorkers {"),
        ("runtime/src/placement/mod.rs", "pub enum NotKept {"),
        ("engine/src/error.rs", "pub enum RecoverError {"),
    ];
    let mut strings = Vec::new();
    for (path, item) in enums {
        let text = source(path);
        let body = item_body(&text, item);
        assert!(!body.is_empty(), "{path}: {item} is where this check looks");
        strings.extend(body.iter().filter(|l| l.contains("(String)")).map(|l| format!("{path}: {}", l.trim())));
    }
    for path in [
        "runtime/src/lib.rs",
        "runtime/src/placement/mod.rs",
        "runtime/src/placement/policy.rs",
        "engine/src/owner/mod.rs",
        "engine/src/owner/device.rs",
    ] {
        let text = without_tests_and_comments(&source(path));
        strings.extend(text.lines().filter(|l| l.contains(", String>")).map(|l| format!("{path}: {}", l.trim())));
    }
    assert!(strings.is_empty(), "say what went wrong as a variant with its values, not a String: {strings:#?}");
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
    // At any depth, through `super::` and groups; a parent naming its child is no cycle.
    let deep = module_edges(&[
        ("lib.rs", "mod w;\n"),
        ("w/mod.rs", "use self::x::A;\n"),
        ("w/x.rs", "use super::{y::Z, A};\n"),
        ("w/y.rs", "fn f() { crate::w::x::g() }\n"),
        ("w/z.rs", "use super::super::w::x::B;\n"),
    ]);
    assert_eq!(cycles(&deep), [vec!["w::x".to_owned(), "w::y".to_owned()]]);
    assert!(deep.get("w::z").is_some_and(|to| to.contains("w::x")), "{deep:?}");
}

/// A module's path inside its crate, from its file's path under `src`: `rust/expr.rs` is
/// `rust::expr`, `rust/mod.rs` is `rust`, `lib.rs` and `main.rs` are the crate's root (empty).
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    if parts == ["lib"] || parts == ["main"] {
        parts.clear();
    }
    parts
}

/// The paths named at the start of `rest` (`a::b::C`, or each of `a::{b, c::D}`), as words.
fn paths_at(rest: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let len = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
    if len == 0 {
        return Vec::new();
    }
    let word = rest[..len].to_owned();
    let after = &rest[len..];
    let Some(next) = after.strip_prefix("::") else { return vec![vec![word]] };
    let inner: Vec<Vec<String>> = match next.strip_prefix('{') {
        Some(group) => {
            let (mut depth, mut end) = (1, group.len());
            for (at, c) in group.char_indices() {
                depth += match c {
                    '{' => 1,
                    '}' => -1,
                    _ => 0,
                };
                if depth == 0 {
                    end = at;
                    break;
                }
            }
            group[..end].split(',').flat_map(|item| paths_at(item.trim_start())).collect()
        }
        None => paths_at(next),
    };
    if inner.is_empty() {
        return vec![vec![word]];
    }
    inner.into_iter().map(|tail| std::iter::once(word.clone()).chain(tail).collect()).collect()
}

/// The paths a module's code names through `crate::`, `super::` or `self::`, made absolute.
fn named_paths(code: &str, from: &[String]) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut found = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            if code[..at].chars().next_back().is_some_and(ident) {
                continue;
            }
            for path in paths_at(&code[at..]) {
                let mut base: Vec<String> = match path[0].as_str() {
                    "crate" => Vec::new(),
                    "self" => from.to_vec(),
                    _ => from[..from.len().saturating_sub(1)].to_vec(),
                };
                let mut rest = &path[1..];
                while rest.first().is_some_and(|w| w == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                base.extend(rest.iter().cloned());
                found.push(base);
            }
        }
    }
    found
}

/// Each module and the modules beside it that it names (as `crate::…`, `super::…` or
/// `self::…`), at any depth: a module that uses another is an edge between the two children,
/// one on each side, of the deepest module holding both (`rust::expr` to `rust::flow`).
fn module_edges(files: &[(&str, &str)]) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let modules: std::collections::BTreeSet<Vec<String>> = files.iter().map(|(p, _)| module_path(p)).collect();
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = Default::default();
    for (path, text) in files {
        let from = module_path(path);
        for named in named_paths(&without_tests_and_comments(text), &from) {
            let Some(to) = (1..=named.len()).rev().map(|n| named[..n].to_vec()).find(|p| modules.contains(p)) else {
                continue;
            };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                edges.entry(from[..=common].join("::")).or_default().insert(to[..=common].join("::"));
            }
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
