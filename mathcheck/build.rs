//! Makes the math library's test blocks with xcd-build, so that their CPU form is the one every
//! kernel gets: for each function, `NAME1` (on each f32 of an array) and `NAME4` (on each
//! vec4<f32>, componentwise), written here from one template into OUT_DIR.

/// The library's one-argument functions, as WGSL names them.
const FUNCTIONS: &[&str] = &["exp", "exp2", "log", "log2"];

/// A kernel applying `FUN` to each element of `x`, of type `ELEM`, into `y`.
const TEMPLATE: &str = "// FUN on each ELEM of x.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<ELEM>;
@group(0) @binding(2) var<storage, read_write> y: array<ELEM>;

@compute @workgroup_size(64)
fn BLOCK(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    y[i] = FUN(x[i]);
}
";

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("wgsl");
    std::fs::create_dir_all(&out).expect("a folder for the kernels");
    let mut files = Vec::new();
    for fun in FUNCTIONS {
        for (lanes, elem) in [(1, "f32"), (4, "vec4<f32>")] {
            let block = format!("{fun}_{lanes}");
            let path = out.join(format!("{block}.wgsl"));
            let text = TEMPLATE.replace("BLOCK", &block).replace("FUN", fun).replace("ELEM", elem);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&path, text).expect("the kernel written");
            }
            files.push(path);
        }
    }
    println!("cargo::rerun-if-changed=build.rs");
    xcd_build::compile(&files);
}
