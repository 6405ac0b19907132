//! One block's generated module: its description, its forms, its typed call and its CPU form,
//! as readable Rust. It only writes text; `lib.rs` decides where it goes.

use std::fmt::Write as _;

use xcd_forms::{FormsError, Marks};
use xcd_wire::{Access, ArrayRole, BlockDesc, ParamKind};

/// Everything made from one WGSL file.
pub(crate) struct Made {
    desc: BlockDesc,
    wgsl: String,
    spirv: Vec<u32>,
    msl: String,
    ptx: String,
    cpu: String,
    /// The Rust element type of each array.
    elems: Vec<String>,
}

impl Made {
    pub(crate) fn new(wgsl: &str, name: &str, marks: &Marks) -> Result<Made, FormsError> {
        let (desc, kernel) = xcd_forms::describe(wgsl, name, name, marks)?;
        let per_item: Vec<bool> = desc.arrays.iter().map(|a| matches!(a.role, ArrayRole::PerItem(_))).collect();
        Ok(Made {
            spirv: kernel.spirv()?,
            msl: kernel.msl()?,
            ptx: kernel.ptx()?,
            cpu: kernel.rust(&per_item)?,
            elems: kernel.rust_array_types()?,
            desc,
            wgsl: wgsl.to_owned(),
        })
    }

    /// The form files, by extension.
    pub(crate) fn files(&self) -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("wgsl", self.wgsl.as_bytes().to_vec()),
            ("spv", self.spirv.iter().flat_map(|w| w.to_le_bytes()).collect()),
            ("msl", self.msl.as_bytes().to_vec()),
            ("ptx", self.ptx.as_bytes().to_vec()),
        ]
    }

    /// `pub mod NAME { … }`, made from `path`.
    pub(crate) fn module(&self, path: &str) -> String {
        let d = &self.desc;
        let name = &d.name;
        let mut o = String::new();
        let _ = writeln!(o, "/// The `{name}` block, made by xcd-build from `{path}`.");
        let _ = writeln!(o, "#[allow(unused, non_snake_case, non_camel_case_types, clippy::all, clippy::pedantic)]");
        let _ = writeln!(o, "pub mod {name} {{");
        let _ = writeln!(o, "    use ::xcd_runtime::wire;\n");
        let file = |ext: &str| format!("concat!(env!(\"OUT_DIR\"), \"/xcd-build/{name}.{ext}\")");
        let _ = writeln!(o, "    /// The block's WGSL: the one source of every form.");
        let _ = writeln!(o, "    pub const WGSL: &str = include_str!({});\n", file("wgsl"));
        self.desc_fn(&mut o, &file);
        let _ = writeln!(o, "    /// The block: its description with every form, and its CPU form [`cpu`].");
        let _ = writeln!(o, "    pub fn block() -> ::xcd_runtime::Block {{");
        let _ = writeln!(
            o,
            "        static BLOCK: ::std::sync::OnceLock<::xcd_runtime::Block> = ::std::sync::OnceLock::new();"
        );
        let _ = writeln!(
            o,
            "        BLOCK.get_or_init(|| ::xcd_runtime::Block {{ desc: ::std::sync::Arc::new(desc()), cpu }}).clone()"
        );
        let _ = writeln!(o, "    }}\n");
        self.run_fns(&mut o);
        let _ = writeln!(o, "    // The CPU form, written from the kernel's IR by xcd-forms.\n");
        for line in self.cpu.lines() {
            if line.is_empty() {
                o.push('\n');
            } else {
                let _ = writeln!(o, "    {line}");
            }
        }
        let _ = writeln!(o, "}}\n");
        o
    }

    fn desc_fn(&self, o: &mut String, file: &dyn Fn(&str) -> String) {
        let d = &self.desc;
        let _ = writeln!(o, "    /// The block's description, every form included: what a daemon is sent.");
        let _ = writeln!(o, "    pub fn desc() -> wire::BlockDesc {{");
        let _ = writeln!(o, "        wire::BlockDesc {{");
        let _ = writeln!(o, "            name: {:?}.to_owned(),", d.name);
        let _ = writeln!(o, "            entry: {:?}.to_owned(),", d.entry);
        let _ = writeln!(o, "            arrays: vec![");
        for a in &d.arrays {
            let role = match a.role {
                ArrayRole::PerItem(Access::In) => "wire::ArrayRole::PerItem(wire::Access::In)",
                ArrayRole::PerItem(Access::Out) => "wire::ArrayRole::PerItem(wire::Access::Out)",
                ArrayRole::PerItem(Access::InOut) => "wire::ArrayRole::PerItem(wire::Access::InOut)",
                ArrayRole::Whole => "wire::ArrayRole::Whole",
            };
            let _ = writeln!(
                o,
                "                wire::ArraySpec {{ name: {:?}.to_owned(), elem_size: {}, role: {role} }},",
                a.name, a.elem_size
            );
        }
        let _ = writeln!(o, "            ],");
        let _ = writeln!(o, "            params: vec![");
        for p in &d.params {
            let _ = writeln!(
                o,
                "                wire::ParamSpec {{ name: {:?}.to_owned(), kind: wire::ParamKind::{:?} }},",
                p.name, p.kind
            );
        }
        let _ = writeln!(o, "            ],");
        let _ = writeln!(o, "            forms: wire::Forms {{");
        let _ = writeln!(o, "                wgsl: Some(WGSL.to_owned()),");
        let _ = writeln!(
            o,
            "                spirv: Some(include_bytes!({}).chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect()),",
            file("spv")
        );
        let _ = writeln!(o, "                msl: Some(include_str!({}).to_owned()),", file("msl"));
        let _ = writeln!(o, "                ptx: Some(include_str!({}).to_owned()),", file("ptx"));
        let _ = writeln!(o, "            }},");
        let _ = writeln!(o, "        }}");
        let _ = writeln!(o, "    }}\n");
    }

    /// The typed call: parameters by their WGSL types, then arrays by their element types.
    fn run_fns(&self, o: &mut String) {
        let d = &self.desc;
        let mut taken = vec!["par".to_owned(), "n".to_owned(), "options".to_owned(), "args".to_owned()];
        let mut fresh = |name: &str| {
            let mut id = xcd_forms::rust::ident(Some(name), "value".to_owned());
            while taken.contains(&id) {
                id.push('_');
            }
            taken.push(id.clone());
            id
        };
        let mut sig = Vec::new();
        let mut names = Vec::new();
        let mut builder = String::from("::xcd_runtime::Args::new()");
        let mut docs = Vec::new();
        for p in &d.params {
            let id = fresh(&p.name);
            let ty = match p.kind {
                ParamKind::U32 => "u32",
                ParamKind::I32 => "i32",
                ParamKind::F32 => "f32",
            };
            sig.push(format!("{id}: {ty}"));
            names.push(id.clone());
            let _ = write!(builder, ".{ty}({id})");
            docs.push(format!("`{id}` (parameter)"));
        }
        let mut checks = Vec::new();
        for (a, elem) in d.arrays.iter().zip(&self.elems) {
            let id = fresh(&a.name);
            let (ty, method, what) = array_arg(a.role, elem);
            sig.push(format!("{id}: {ty}"));
            names.push(id.clone());
            let _ = write!(builder, ".{method}({id})");
            docs.push(format!("`{id}` ({what})"));
            if matches!(a.role, ArrayRole::PerItem(_)) {
                checks.push(format!(
                    "        if {id}.len() as u64 != u64::from(n) {{\n            return Err(::xcd_runtime::RunError::Args {{ block: {:?}.to_owned(), msg: format!(\"array {} has {{}} elements; a run of {{n}} items needs {{n}}\", {id}.len()) }});\n        }}",
                    d.name, a.name
                ));
            }
        }
        let sig = if sig.is_empty() { String::new() } else { format!(", {}", sig.join(", ")) };
        let list = docs.join(", ");
        let _ = writeln!(o, "    /// Runs the block over items `0..n` with {list}; results land in place.");
        let _ = writeln!(o, "    #[track_caller]");
        let _ = writeln!(
            o,
            "    pub fn run(par: &::xcd_runtime::Par, n: u32{sig}) -> Result<::xcd_runtime::RunReport, ::xcd_runtime::RunError> {{"
        );
        let pass: String = names.iter().map(|n| format!("{n}, ")).collect();
        let _ = writeln!(o, "        run_with(par, n, {pass}&::xcd_runtime::RunOptions::default())");
        let _ = writeln!(o, "    }}\n");
        let _ = writeln!(o, "    /// [`run`] with options (tile size, progress).");
        let _ = writeln!(o, "    #[track_caller]");
        let _ = writeln!(
            o,
            "    pub fn run_with(par: &::xcd_runtime::Par, n: u32{sig}, options: &::xcd_runtime::RunOptions<'_>) -> Result<::xcd_runtime::RunReport, ::xcd_runtime::RunError> {{"
        );
        for c in checks {
            let _ = writeln!(o, "{c}");
        }
        let _ = writeln!(o, "        par.run_with(&block(), n, {builder}, options)");
        let _ = writeln!(o, "    }}\n");
    }
}

/// How a typed `run` takes an array of this role with elements `elem`: its Rust type, the
/// `Args` method that passes it, and the words its doc uses.
fn array_arg(role: ArrayRole, elem: &str) -> (String, &'static str, &'static str) {
    match role {
        ArrayRole::PerItem(Access::In) => (format!("&[{elem}]"), "input", "read, one per item"),
        ArrayRole::PerItem(Access::Out) => (format!("&mut [{elem}]"), "output", "written, one per item"),
        ArrayRole::PerItem(Access::InOut) => (format!("&mut [{elem}]"), "inout", "read and written, one per item"),
        ArrayRole::Whole => (format!("&[{elem}]"), "whole", "whole, shared by every item"),
    }
}
