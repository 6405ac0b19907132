//! A PTX kernel's parameter list, read from its text, against the launch xcd makes
//! (docs/kernels.md): the tile header's words and the block's parameters, 32 bits each, then for
//! each array a 64-bit pointer and a 32-bit length. The driver reads as many arguments as the
//! PTX declares, so a carried PTX that declares more would make it read past the launch's
//! arguments in the daemon's memory: such PTX is refused before it loads. Owns the reading and
//! the words of the refusal; needs no driver.

use xcd_wire::{BlockDesc, TILE_HEADER_WORDS};

/// The bytes of each parameter the launch passes, in order.
fn launched(desc: &BlockDesc) -> Vec<usize> {
    let words = TILE_HEADER_WORDS + desc.params.len();
    std::iter::repeat_n(4, words).chain(desc.arrays.iter().flat_map(|_| [8, 4])).collect()
}

/// The text without `//` and `/* */` comments.
fn uncommented(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut rest = ptx;
    while let Some(at) = rest.find('/') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if tail.starts_with("//") {
            rest = tail.find('\n').map_or("", |end| &tail[end..]);
        } else if let Some(body) = tail.strip_prefix("/*") {
            rest = body.find("*/").map_or("", |end| &body[end + 2..]);
            out.push(' ');
        } else {
            out.push('/');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The declarations of entry `name`'s parameters, or `None` when the text has no such entry.
fn declarations(ptx: &str, name: &str) -> Option<Vec<String>> {
    let text = uncommented(ptx);
    let mut rest = text.as_str();
    while let Some(at) = rest.find(".entry") {
        let after = &rest[at + ".entry".len()..];
        rest = after;
        if !after.starts_with(char::is_whitespace) {
            continue;
        }
        let after = after.trim_start();
        let end = after.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')).unwrap_or(after.len());
        if &after[..end] != name {
            continue;
        }
        let after = after[end..].trim_start();
        let Some(list) = after.strip_prefix('(') else { return Some(Vec::new()) };
        let list = &list[..list.find(')').unwrap_or(list.len())];
        return Some(list.split(',').map(str::trim).filter(|d| !d.is_empty()).map(str::to_owned).collect());
    }
    None
}

/// A declaration's bytes: 4 or 8 for a scalar of those widths, `None` for anything else (an
/// array, a narrower or wider type).
fn bytes(declaration: &str) -> Option<usize> {
    if declaration.contains('[') {
        return None;
    }
    declaration.split_whitespace().find_map(|word| match word {
        ".u32" | ".s32" | ".b32" | ".f32" => Some(4),
        ".u64" | ".s64" | ".b64" | ".f64" => Some(8),
        _ => None,
    })
}

/// Checks that PTX entry `name` declares the parameters xcd launches block `desc`'s kernel with;
/// why not, in a person's words.
pub(crate) fn check(ptx: &str, name: &str, desc: &BlockDesc) -> Result<(), String> {
    let declared = declarations(ptx, name).ok_or_else(|| {
        format!("its PTX has no entry named {name} (the name xcd gives entry {} in PTX: docs/kernels.md)", desc.entry)
    })?;
    let want = launched(desc);
    let have: Vec<Option<usize>> = declared.iter().map(|d| bytes(d)).collect();
    if have.iter().copied().eq(want.iter().map(|w| Some(*w))) {
        return Ok(());
    }
    let said: Vec<String> =
        have.iter().map(|b| b.map_or_else(|| "other".to_owned(), |b| (b * 8).to_string())).collect();
    Err(format!(
        "its PTX entry {name} declares {} parameters (bits: {}), and xcd launches it with {}: {} header words and {} parameters of 32 bits, then a 64-bit pointer and a 32-bit length for each of its {} arrays (docs/kernels.md, \"PTX (CUDA)\")",
        declared.len(),
        if said.is_empty() { "none".to_owned() } else { said.join(", ") },
        want.len(),
        TILE_HEADER_WORDS,
        desc.params.len(),
        desc.arrays.len()
    ))
}

#[cfg(test)]
mod tests {
    use xcd_wire::{Access, ArrayRole, ArraySpec, Forms, ParamKind, ParamSpec};

    use super::*;

    fn desc(params: usize, arrays: usize) -> BlockDesc {
        BlockDesc {
            name: "b".into(),
            entry: "k".into(),
            arrays: (0..arrays)
                .map(|k| ArraySpec { name: format!("a{k}"), elem_size: 4, role: ArrayRole::PerItem(Access::Out) })
                .collect(),
            params: (0..params).map(|k| ParamSpec { name: format!("p{k}"), kind: ParamKind::U32 }).collect(),
            forms: Forms::default(),
        }
    }

    const TWO_ARRAYS: &str = "// made\n.version 6.0\n.target sm_60\n.address_size 64\n\n.visible .entry k(\n\t.param .u32 xc_p0,\n\t.param .u32 xc_p1,\n\t.param .u32 xc_p2,\n\t.param .f32 xc_p3,\n\t.param .u64 xc_a0,\n\t.param .u32 xc_n0,\n\t.param .u64 .ptr .global .align 4 xc_a1, /* a pointer */\n\t.param .u32 xc_n1\n)\n{\n\tret;\n}\n";

    #[test]
    fn a_list_that_matches_the_launch_passes() {
        assert_eq!(check(TWO_ARRAYS, "k", &desc(1, 2)), Ok(()));
        let why = check(".entry k\n{ ret; }", "k", &desc(0, 0)).expect_err("no list is no parameters");
        assert!(why.contains("declares 0 parameters (bits: none), and xcd launches it with 3"), "{why}");
    }

    #[test]
    fn a_list_longer_or_shorter_than_the_launch_is_refused() {
        let why = check(TWO_ARRAYS, "k", &desc(1, 1)).expect_err("one array too many");
        assert!(
            why.contains("declares 8 parameters (bits: 32, 32, 32, 32, 64, 32, 64, 32), and xcd launches it with 6"),
            "{why}"
        );
        assert!(check(TWO_ARRAYS, "k", &desc(2, 2)).is_err(), "one parameter too few");
        let wide = TWO_ARRAYS.replace(".param .u32 xc_n1", ".param .align 8 .b8 xc_n1[16]");
        let why = check(&wide, "k", &desc(1, 2)).expect_err("an aggregate");
        assert!(why.contains("bits: 32, 32, 32, 32, 64, 32, 64, other"), "{why}");
    }

    #[test]
    fn the_entry_is_found_by_name_past_comments_and_other_entries() {
        let two = format!(".visible .entry kk()\n{{ ret; }}\n// .entry k(\n/* .entry k( */\n{TWO_ARRAYS}");
        assert_eq!(check(&two, "k", &desc(1, 2)), Ok(()));
        let why = check(TWO_ARRAYS, "flip", &desc(1, 2)).expect_err("no such entry");
        assert!(why.starts_with("its PTX has no entry named flip"), "{why}");
        assert!(check(".entryk(.param .u32 a)", "k", &desc(0, 0)).is_err(), "`.entryk` is not `.entry k`");
    }
}
