//! A block's description, derived from its WGSL alone: what `xcd-build` writes into a program
//! and what `xcrun block --wgsl` prints for a REST client.
//!
//! Parameters are the uniform's fields after the tile header, with their types. Arrays are the
//! storage bindings in order, each element's size its stride: a `read` array is per-item input,
//! unless marked whole; a `read_write` array is per-item input-output when the kernel loads
//! from it anywhere, and output when it only stores to it. Marks decide what the source cannot
//! say, and override the guess: `// xcd: whole`, `// xcd: out` or `// xcd: inout` at the end of
//! the binding's line or on the line above it, or the same names given by the caller.
//!
//! It reads the kernel; it makes no form beyond checking the kernel makes them.

use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamSpec};

use crate::{FormsError, Kernel, Location};

/// Roles given by the caller, by array name (a build script's or a command line's marks).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Marks {
    /// Arrays shared whole by every tile.
    pub whole: Vec<String>,
    /// `read_write` arrays the block only writes.
    pub out: Vec<String>,
    /// `read_write` arrays the block reads and writes.
    pub inout: Vec<String>,
}

/// The mark of a source line: the word after `xcd:` in its `//` comment.
fn mark_of(line: &str) -> Option<&str> {
    let comment = &line[line.find("//")? + 2..];
    comment.trim_start().strip_prefix("xcd:")?.split_whitespace().next()
}

/// The mark on an array's declaration line, or on a comment line just above it.
fn source_mark(source: &str, line: u32) -> Option<(&str, u32)> {
    let lines: Vec<&str> = source.lines().collect();
    let at = line.checked_sub(1)? as usize;
    if let Some(mark) = lines.get(at).and_then(|l| mark_of(l)) {
        return Some((mark, line));
    }
    let above = lines.get(at.checked_sub(1)?)?;
    if above.trim_start().starts_with("//") { mark_of(above).map(|m| (m, line - 1)) } else { None }
}

fn refuse(line: Option<u32>, what: String) -> FormsError {
    FormsError::Abi { at: line.map(|line| Location { line, column: 1 }), what }
}

/// Reads `wgsl`, checks it makes every form, and derives block `name`'s description (entry
/// point `entry`, carrying its WGSL as its only form). Returns the checked kernel with it.
pub fn describe(wgsl: &str, name: &str, entry: &str, marks: &Marks) -> Result<(BlockDesc, Kernel), FormsError> {
    let kernel = Kernel::from_wgsl(wgsl, entry)?;
    let interface = kernel.interface().clone();
    let names: Vec<&str> = interface.arrays.iter().map(|a| a.name.as_str()).collect();
    for (list, what) in [(&marks.whole, "whole"), (&marks.out, "out"), (&marks.inout, "inout")] {
        for marked in list {
            if !names.contains(&marked.as_str()) {
                return Err(refuse(
                    None,
                    format!(
                        "{marked} is marked {what}, but the kernel binds no array of that name (it binds {})",
                        names.join(", ")
                    ),
                ));
            }
        }
    }
    let mut arrays = Vec::new();
    for array in &interface.arrays {
        let from_source = array.line.and_then(|line| source_mark(wgsl, line));
        let mut mark = from_source.map(|(m, _)| m);
        let line = from_source.map(|(_, l)| l).or(array.line);
        for (list, what) in [(&marks.whole, "whole"), (&marks.out, "out"), (&marks.inout, "inout")] {
            if list.contains(&array.name) {
                mark = Some(what);
            }
        }
        let role = role(array, mark, line)?;
        arrays.push(ArraySpec { name: array.name.clone(), elem_size: array.stride, role });
    }
    let params = interface.params.iter().map(|(name, kind)| ParamSpec { name: name.clone(), kind: *kind }).collect();
    let desc = BlockDesc {
        name: name.to_owned(),
        entry: entry.to_owned(),
        arrays,
        params,
        forms: Forms { wgsl: Some(wgsl.to_owned()), ..Forms::default() },
    };
    desc.validate().map_err(|e| refuse(None, e.to_string()))?;
    Ok((desc, kernel))
}

/// An array's role from its mark (if any) and its access: read-only arrays are inputs (or whole
/// with the mark), `read_write` ones are outputs, or input-outputs where the kernel loads them.
fn role(array: &crate::ArrayBinding, mark: Option<&str>, line: Option<u32>) -> Result<ArrayRole, FormsError> {
    Ok(match (mark, array.read_only) {
        (Some("whole"), true) => ArrayRole::Whole,
        (Some("whole"), false) => {
            return Err(refuse(
                line,
                format!(
                    "{} is marked whole but is var<storage, read_write>: a whole array is shared by every tile, so it is read-only; declare it var<storage, read>",
                    array.name
                ),
            ));
        }
        (Some("out" | "inout"), true) => {
            return Err(refuse(
                line,
                format!(
                    "{} is marked as written but is var<storage, read>; declare it var<storage, read_write>",
                    array.name
                ),
            ));
        }
        (Some("out"), false) => ArrayRole::PerItem(Access::Out),
        (Some("inout"), false) => ArrayRole::PerItem(Access::InOut),
        (Some(other), _) => {
            return Err(refuse(
                line,
                format!("unknown mark `xcd: {other}` on {}: the marks are whole, out and inout", array.name),
            ));
        }
        (None, true) => ArrayRole::PerItem(Access::In),
        (None, false) if array.loaded => ArrayRole::PerItem(Access::InOut),
        (None, false) => ArrayRole::PerItem(Access::Out),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLY: &str = r#"
struct Tile { start: u32, count: u32, first: u32, terms: u32, scale: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
// xcd: whole
@group(0) @binding(2) var<storage, read> coef: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<storage, read_write> z: array<u32>;
@compute @workgroup_size(64)
fn poly(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = y[i] + x[i] * coef[0] * tile.scale;
    z[i] = tile.terms;
}
"#;

    #[test]
    fn roles_come_from_access_use_and_marks() {
        let (desc, _) = describe(POLY, "poly", "poly", &Marks::default()).expect("describes");
        let roles: Vec<_> = desc.arrays.iter().map(|a| (a.name.as_str(), a.role)).collect();
        assert_eq!(
            roles,
            [
                ("x", ArrayRole::PerItem(Access::In)),
                ("coef", ArrayRole::Whole),
                ("y", ArrayRole::PerItem(Access::InOut)),
                ("z", ArrayRole::PerItem(Access::Out)),
            ]
        );
        let params: Vec<_> = desc.params.iter().map(|p| (p.name.as_str(), p.kind)).collect();
        assert_eq!(params, [("terms", xcd_wire::ParamKind::U32), ("scale", xcd_wire::ParamKind::F32)]);
        let marks = Marks { out: vec!["y".into()], ..Marks::default() };
        let (desc, _) = describe(POLY, "poly", "poly", &marks).expect("describes");
        assert_eq!(desc.arrays[2].role, ArrayRole::PerItem(Access::Out));
    }

    #[test]
    fn bad_marks_say_what_to_do() {
        let e = describe(POLY, "poly", "poly", &Marks { whole: vec!["w".into()], ..Marks::default() })
            .expect_err("no array w");
        assert!(e.to_string().contains("binds no array of that name (it binds x, coef, y, z)"), "{e}");
        let e = describe(POLY, "poly", "poly", &Marks { whole: vec!["y".into()], ..Marks::default() })
            .expect_err("y is written");
        assert!(e.to_string().contains("declare it var<storage, read>"), "{e}");
        let typo = POLY.replace("// xcd: whole", "// xcd: wohle");
        let e = describe(&typo, "poly", "poly", &Marks::default()).expect_err("unknown mark");
        assert!(
            e.to_string().starts_with("line 5:1: the kernel breaks the ABI: unknown mark `xcd: wohle` on coef"),
            "{e}"
        );
    }
}
