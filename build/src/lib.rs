//! xcd-build: a program's `build.rs` hands it WGSL kernels, and it writes a Rust module per
//! block, as prost-build does for protobuf.
//!
//! ```no_run
//! // build.rs: fn main() { … }
//! xcd_build::compile(&["wgsl/blur.wgsl"]);
//! ```
//! ```ignore
//! // src/main.rs
//! xcd_runtime::include_blocks!();
//! // blur::run(&par, n, width, height, &image, &mut out)?;
//! ```
//!
//! Each file is one block, named after the file, whose entry point has the file's name. Its
//! module (in `OUT_DIR/xcd_blocks.rs`) holds the block description derived from the WGSL
//! (`xcd_forms::describe`: parameters from the uniform, arrays from the storage bindings,
//! `// xcd: whole` marks), every GPU form made at build time (SPIR-V, MSL, PTX, written under
//! `OUT_DIR/xcd-build/`), the CPU form written as Rust from the same IR (`xcd_forms::rust`, in
//! `OUT_DIR/xcd-build/NAME.rs`, which the module includes), and a typed call:
//! `run(&par, n, params…, arrays…)` and `run_with(…, &options)`, parameters typed by the WGSL and
//! arrays by their elements, so a wrong type or order does not compile. The module is built as a
//! syntax tree (`quote`, `syn`) and printed by `prettyplease`.
//!
//! A kernel that does not parse, leaves the exact subset or breaks the ABI fails the build with
//! `file:line:col` and why. Output is written only where it changed, so a build that changed no
//! kernel rebuilds nothing. It reads files and writes under `OUT_DIR`; no network.
#![forbid(unsafe_code)]

mod module;

use std::path::{Path, PathBuf};

use xcd_forms::{FormsError, Marks};

/// Why blocks could not be made.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A kernel file could not be read.
    #[error("{path}: cannot read it: {source}")]
    Read {
        /// The kernel file, as the builder was given it.
        path: String,
        /// What the file system said.
        source: std::io::Error,
    },
    /// A kernel is wrong: where, and what naga or xcd-forms said.
    #[error("{0}")]
    Kernel(String),
    /// A file's name cannot name a Rust module and a WGSL entry point.
    #[error(
        "{path}: a block is named after its file, and {stem:?} is not a name: call the file NAME.wgsl with NAME made of letters, digits and _"
    )]
    Name {
        /// The kernel file, as the builder was given it.
        path: String,
        /// Its name without `.wgsl`, which would name the block.
        stem: String,
    },
    /// Two files give blocks of one name.
    #[error("{first} and {second} would both make block {block}: give them different names")]
    Twice {
        /// The file met first.
        first: String,
        /// The file met second.
        second: String,
        /// The block both would make.
        block: String,
    },
    /// Output could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file or folder under `OUT_DIR` being written.
        path: String,
        /// What the file system said.
        source: std::io::Error,
    },
    /// `OUT_DIR` is not set: not run by cargo, and no `out_dir` given.
    #[error("OUT_DIR is not set: run from a build.rs, or give Builder::out_dir")]
    NoOutDir,
}

/// Blocks to make: WGSL files and the marks their sources do not carry.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    files: Vec<PathBuf>,
    marks: Vec<(String, Marks)>,
    out_dir: Option<PathBuf>,
}

/// Makes a block of each WGSL file, for `include_blocks!()`; on any error, tells cargo where
/// and why, and ends the build script. The one line of a `build.rs`.
pub fn compile(files: &[impl AsRef<Path>]) {
    let mut builder = Builder::new();
    for f in files {
        builder = builder.file(f);
    }
    builder.compile();
}

impl Builder {
    /// No files yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a WGSL file (relative to the package, as cargo runs build scripts there).
    pub fn file(mut self, path: impl AsRef<Path>) -> Self {
        self.files.push(path.as_ref().to_owned());
        self
    }

    fn marks(&mut self, block: &str) -> &mut Marks {
        if let Some(k) = self.marks.iter().position(|(b, _)| b == block) {
            return &mut self.marks[k].1;
        }
        self.marks.push((block.to_owned(), Marks::default()));
        let last = self.marks.len() - 1;
        &mut self.marks[last].1
    }

    /// Marks array `array` of block `block` whole (shared by every tile), as `// xcd: whole`.
    pub fn whole(mut self, block: &str, array: &str) -> Self {
        self.marks(block).whole.push(array.to_owned());
        self
    }

    /// Marks `read_write` array `array` of block `block` as only written, as `// xcd: out`.
    pub fn out(mut self, block: &str, array: &str) -> Self {
        self.marks(block).out.push(array.to_owned());
        self
    }

    /// Marks `read_write` array `array` of block `block` as read and written, as `// xcd: inout`.
    pub fn inout(mut self, block: &str, array: &str) -> Self {
        self.marks(block).inout.push(array.to_owned());
        self
    }

    /// Writes under `dir` instead of `OUT_DIR`.
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Makes every block, or says why not (for a caller that reports errors itself).
    pub fn generate(&self) -> Result<(), BuildError> {
        // Cargo sets OUT_DIR for a build script as it runs: then it is told what to watch.
        let in_build_script = std::env::var_os("OUT_DIR").is_some();
        let out = match &self.out_dir {
            Some(dir) => dir.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or(BuildError::NoOutDir)?),
        };
        let forms_dir = out.join("xcd-build");
        std::fs::create_dir_all(&forms_dir)
            .map_err(|source| BuildError::Write { path: forms_dir.display().to_string(), source })?;
        let mut text = String::from("// @generated by xcd-build: one module per block. Do not edit.\n\n");
        let mut names: Vec<(String, String)> = Vec::new();
        for file in &self.files {
            let path = file.display().to_string();
            if in_build_script {
                println!("cargo::rerun-if-changed={path}");
            }
            let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
            if xcd_forms::rust::ident(Some(&stem), String::new()) != stem || stem.is_empty() {
                return Err(BuildError::Name { path, stem });
            }
            if let Some((other, _)) = names.iter().find(|(_, n)| *n == stem) {
                return Err(BuildError::Twice { first: other.clone(), second: path, block: stem });
            }
            names.push((path.clone(), stem.clone()));
            let wgsl =
                std::fs::read_to_string(file).map_err(|source| BuildError::Read { path: path.clone(), source })?;
            let marks = self.marks.iter().find(|(b, _)| *b == stem).map(|(_, m)| m.clone()).unwrap_or_default();
            let made = module::Made::new(&wgsl, &stem, &marks).map_err(|e| BuildError::Kernel(at_file(&path, &e)))?;
            for (ext, bytes) in made.files() {
                write_if_changed(&forms_dir.join(format!("{stem}.{ext}")), &bytes)?;
            }
            text.push_str(&made.module(&path));
        }
        write_if_changed(&out.join("xcd_blocks.rs"), text.as_bytes())
    }

    /// [`generate`](Self::generate), telling cargo of any error (`cargo::error=`, with the
    /// whole message on stderr) and ending the build script with status 1.
    pub fn compile(self) {
        if let Err(e) = self.generate() {
            let text = e.to_string();
            let mut lines = text.lines();
            println!("cargo::error={}", lines.next().unwrap_or_default());
            for line in lines {
                println!("cargo::error={line}");
            }
            std::process::exit(1);
        }
    }
}

/// A kernel's error with the file's path where it has a place: `path:line:col: message`.
fn at_file(path: &str, e: &FormsError) -> String {
    match e {
        FormsError::Unsupported { at: Some(at), .. } | FormsError::Abi { at: Some(at), .. } => {
            let text = e.to_string();
            let prefix = format!("{at}: ");
            format!("{path}:{}:{}: {}", at.line, at.column, text.strip_prefix(&prefix).unwrap_or(&text))
        }
        FormsError::Parse(naga) | FormsError::Invalid(naga) => {
            // naga's report names the source "wgsl" and points at "wgsl:LINE:COL".
            let text = naga.replace("┌─ wgsl:", &format!("┌─ {path}:"));
            match text.split(&format!("┌─ {path}:")).nth(1).and_then(|rest| rest.split_whitespace().next()) {
                Some(place) => {
                    let first = text.lines().next().unwrap_or_default();
                    format!("{path}:{place}: {}\n{text}", first.trim_start_matches("error: "))
                }
                None => format!("{path}: {text}"),
            }
        }
        other => format!("{path}: {other}"),
    }
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|source| BuildError::Write { path: path.display().to_string(), source })
}
