//! The name a block's kernel has in the text forms, PTX and MSL: one rule, used by the writers
//! here and by every loader (the CUDA backend, Metal), so a loader always asks for the name the
//! form has. SPIR-V names are plain strings and keep the entry's own name.
//!
//! The entry's own name is kept when both languages take it as it is: ASCII letters, digits and
//! single underscores, starting with a letter, ending with neither a digit nor `_` (naga's MSL
//! writer appends `_` to such names), not PTX's predefined `WARP_SZ`, and not a word the MSL
//! writer renames (C++ and Metal keywords, `main` among them: asked of naga itself, so the rule
//! follows the naga we build with). Any other name becomes `xc_<name>_k`. PTX opcodes are fine
//! as names (`add`, `trap` and the rest assemble with ptxas 12.9, and nvcc writes its own
//! `extern "C"` kernels so).

use std::sync::OnceLock;

use naga::back::msl;

/// The kernel's name in PTX and MSL for block entry `entry`.
pub fn entry_symbol(entry: &str) -> String {
    if plain(entry) && msl_keeps(entry) { entry.to_owned() } else { mangled(entry) }
}

/// Whether `name` is a name both text languages could take as it is, keywords aside.
fn plain(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.contains("__")
        && !name.ends_with(|c: char| c == '_' || c.is_ascii_digit())
        && name != "WARP_SZ"
}

/// `xc_<name>_k`, with every character that is not an ASCII letter or digit written as its code
/// and runs of `_` made one: always [`plain`], and never a keyword.
fn mangled(name: &str) -> String {
    let mut inner = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            inner.push(c);
        } else if c != '_' {
            inner.push_str(&format!("_u{:04x}_", c as u32));
        } else if !inner.ends_with('_') {
            inner.push('_');
        }
    }
    let inner = inner.replace("__", "_");
    let inner = inner.trim_matches('_');
    if inner.is_empty() { "xc_k".to_owned() } else { format!("xc_{inner}_k") }
}

/// A kernel with one compute entry and nothing else, to ask naga's MSL writer what it names it.
fn template() -> Option<&'static (naga::Module, naga::valid::ModuleInfo)> {
    static TEMPLATE: OnceLock<Option<(naga::Module, naga::valid::ModuleInfo)>> = OnceLock::new();
    TEMPLATE
        .get_or_init(|| {
            let module = naga::front::wgsl::parse_str("@compute @workgroup_size(1) fn xc_template_k() {}").ok()?;
            let info =
                naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
                    .validate(&module)
                    .ok()?;
            Some((module, info))
        })
        .as_ref()
}

/// Whether naga's MSL writer names an entry point `name` as it is.
fn msl_keeps(name: &str) -> bool {
    let Some((module, info)) = template() else { return false };
    let mut module = module.clone();
    module.entry_points[0].name = name.to_owned();
    let pipeline = msl::PipelineOptions {
        entry_point: Some((naga::ShaderStage::Compute, name.to_owned())),
        ..msl::PipelineOptions::default()
    };
    match msl::write_string(&module, info, &msl::Options::default(), &pipeline) {
        Ok((_, written)) => matches!(written.entry_point_names.first(), Some(Ok(got)) if got == name),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_are_kept_and_the_rest_made_plain() {
        for kept in ["flip", "saxpy", "escape", "blur", "add", "trap", "min", "ret", "probe", "a_b", "Kernel"] {
            assert_eq!(entry_symbol(kept), kept);
        }
        for (name, symbol) in [
            ("main", "xc_main_k"),
            ("kernel", "xc_kernel_k"),
            ("float", "xc_float_k"),
            ("blur2", "xc_blur2_k"),
            ("step_", "xc_step_k"),
            ("_step", "xc_step_k"),
            ("a__b", "xc_a_b_k"),
            ("WARP_SZ", "xc_WARP_SZ_k"),
            ("résumé", "xc_r_u00e9_sum_u00e9_k"),
            ("_", "xc_k"),
        ] {
            assert_eq!(entry_symbol(name), symbol, "{name}");
            assert!(plain(symbol) && msl_keeps(symbol), "{symbol} must itself be kept");
        }
    }
}
