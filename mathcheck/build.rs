//! Makes the math library's test blocks with xcd-build, so that their CPU form is the one every
//! kernel gets: for each function, `NAME_1` (on each f32 of an array) and `NAME_4` (on each
//! vec4<f32>, componentwise), written here from one template into OUT_DIR. Beside them,
//! `library_as_wgsl.rs` holds each `NAME_1`'s CPU form with the library's WGSL alone (no f64
//! fast path): the code the GPU forms run, for the proof. And for the rate measure
//! (`math-proof --rate`), `rate_NAME`: each item calls the function 64 times on
//! arguments of its own, and `rate_unchanged` the same loop without it, its baseline. The
//! operations on two or three arguments (`ldexp`, `%`, `fma`) get `NAME_1` and `NAME_4`
//! likewise, with a second (and third) input array. `split_1`, `split_4` and `formulas_4`
//! (frexp and modf, whose results are structs; the builtins WGSL defines by a formula), and
//! `pack_4` and `unpack_4` (the packing builtins) are written out whole.

/// The library's one-argument functions, as WGSL names them.
const FUNCTIONS: &[&str] = &[
    "exp",
    "exp2",
    "log",
    "log2",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "inverseSqrt",
    "degrees",
    "radians",
    "quantizeToF16",
];

/// A function's name in its blocks' names (Rust modules): `inverseSqrt` as `inverse_sqrt`.
fn snake(fun: &str) -> String {
    fun.chars().flat_map(|c| if c.is_ascii_uppercase() { vec!['_', c.to_ascii_lowercase()] } else { vec![c] }).collect()
}

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

/// A kernel calling `FUN` 64 times per item, on arguments spread over `SCALE * t + OFFSET` for
/// `t` in [0, 1), summing the results (in one order, so every form gives the same sum).
const RATE_TEMPLATE: &str = "// FUN's rate: 64 calls per item, on arguments of its own.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn unchanged(v: f32) -> f32 {
    return v;
}

@compute @workgroup_size(64)
fn BLOCK(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    var s = 0.0;
    for (var k = 0u; k < 64u; k = k + 1u) {
        // Each argument from the item's own and k alone, so that calls need not wait on each other.
        let t = fract(x[i] + f32(k) * 0.618034);
        s = s + FUN(t * SCALE + OFFSET);
    }
    y[i] = s;
}
";

/// The arguments a function's rate is measured on: `(SCALE, OFFSET)`, where it is not NaN.
fn rate_range(fun: &str) -> (&'static str, &'static str) {
    match fun {
        "acosh" => ("100.0", "1.0"),
        "asin" | "acos" | "atanh" => ("1.98", "-0.99"),
        _ if fun.starts_with("log") || fun == "inverseSqrt" => ("100.0", "0.01"),
        _ => ("20.0", "-10.0"),
    }
}

/// The library's operations on two or three arguments: the block's name, the second array's
/// element type and the expression (`x`, `n` and, for an operation on three, `z` are the arrays).
/// For each, `NAME_1` on scalars and `NAME_4` on vectors.
const PAIRS: &[(&str, &str, &str)] = &[
    ("ldexp", "i32", "ldexp(x[i], n[i])"),
    ("remainder", "f32", "x[i] % n[i]"),
    ("atan2", "f32", "atan2(x[i], n[i])"),
    ("fma", "f32", "fma(x[i], n[i], z[i])"),
    ("pow", "f32", "pow(x[i], n[i])"),
];

/// A kernel applying `CALL` to each pair of `x` (of `ELEM`) and `n` (of `SECOND`), into `y`;
/// `THIRD` declares `z` (of `ELEM`) for an operation on three, binding 3 (`y` then at `OUT` 4).
const PAIR_TEMPLATE: &str = "// y[i] = CALL for each i.
struct Tile {
    start: u32,
    count: u32,
    first: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<ELEM>;
@group(0) @binding(2) var<storage, read> n: array<SECOND>;
THIRD@group(0) @binding(OUT) var<storage, read_write> y: array<ELEM>;

@compute @workgroup_size(64)
fn BLOCK(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) {
        return;
    }
    y[i] = CALL;
}
";

/// Blocks of their own: `frexp` and `modf` (whose results are structs) on scalars and vectors,
/// the builtins WGSL defines by a formula (`smoothstep`, `reflect`, `refract`, `faceForward`),
/// and the packing builtins, each field or result into an array of its own. Each is its name,
/// the comment that opens it, its arrays (bindings from 1) and the body that runs for item `i`
/// ([`whole_kernel`] writes the rest).
const BLOCKS: &[(&str, &str, &str, &str)] = &[
    (
        "split_1",
        "// frexp and modf on each f32 of x: their fields, the exponent converted (exactly).",
        "@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;",
        "    let f = frexp(x[i]);
    let m = modf(x[i]);
    y[i] = vec4<f32>(f.fract, f32(f.exp), m.fract, m.whole);
",
    ),
    (
        "split_4",
        "// frexp and modf on each vec4<f32> of x, each field into its own array.",
        "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> fract_f: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> exp_f: array<vec4<i32>>;
@group(0) @binding(4) var<storage, read_write> fract_m: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> whole_m: array<vec4<f32>>;",
        "    let f = frexp(x[i]);
    fract_f[i] = f.fract;
    exp_f[i] = f.exp;
    let m = modf(x[i]);
    fract_m[i] = m.fract;
    whole_m[i] = m.whole;
",
    ),
    (
        "formulas_4",
        "// smoothstep, reflect, refract and faceForward on vec4<f32>, each into its own array.",
        "@group(0) @binding(1) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> c: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> smoothed: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> reflected: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> refracted: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> facing: array<vec4<f32>>;",
        "    smoothed[i] = smoothstep(a[i], b[i], c[i]);
    reflected[i] = reflect(a[i], b[i]);
    refracted[i] = refract(a[i], b[i], c[i].w);
    facing[i] = faceForward(a[i], b[i], c[i]);
",
    ),
    (
        "pack_4",
        "// The packing builtins and the packed dot products on each vec4<f32> of x and vec4<u32> of w.",
        "@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> norms: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> ints: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read_write> halves: array<vec4<u32>>;",
        "    let v = x[i];
    let u = w[i];
    let s = bitcast<vec4<i32>>(u);
    norms[i] = vec4<u32>(pack4x8snorm(v), pack4x8unorm(v), pack2x16snorm(v.xy), pack2x16unorm(v.zw));
    ints[i] = vec4<u32>(pack4xI8(s), pack4xU8(u), pack4xI8Clamp(s), pack4xU8Clamp(u));
    let dots = vec2<u32>(bitcast<u32>(dot4I8Packed(u.x, u.y)), dot4U8Packed(u.z, u.w));
    halves[i] = vec4<u32>(pack2x16float(v.xy), pack2x16float(v.zw), dots);
",
    ),
    (
        "unpack_4",
        "// The unpacking builtins on each vec4<u32> of w.",
        "@group(0) @binding(1) var<storage, read> w: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> snorm8: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> unorm8: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> norm16: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> halves: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> bytes: array<vec4<u32>>;",
        "    let u = w[i];
    snorm8[i] = unpack4x8snorm(u.x);
    unorm8[i] = unpack4x8unorm(u.y);
    norm16[i] = vec4<f32>(unpack2x16snorm(u.z), unpack2x16unorm(u.w));
    halves[i] = vec4<f32>(unpack2x16float(u.x), unpack2x16float(u.y));
    bytes[i] = vec4<u32>(bitcast<u32>(unpack4xI8(u.z).x), bitcast<u32>(unpack4xI8(u.z).w), unpack4xU8(u.w).yz);
",
    ),
];

/// A kernel of the ABI: the tile header, `arrays`, and `body` for each item `i` of the tile.
fn whole_kernel(block: &str, comment: &str, arrays: &str, body: &str) -> String {
    let start = "let i = tile.first + gid.x;\n    if (i >= tile.count) {\n        return;\n    }";
    format!(
        "{comment}\n{HEADER}{arrays}\n\n@compute @workgroup_size(64)\nfn {block}(@builtin(global_invocation_id) gid: vec3<u32>) {{\n    {start}\n{body}}}\n"
    )
}

/// The tile header every kernel binds first.
const HEADER: &str = "struct Tile {
    start: u32,
    count: u32,
    first: u32,
}

@group(0) @binding(0) var<uniform> tile: Tile;
";

/// Writes `text` to `path` unless it already holds it, so cargo does not rebuild for nothing.
fn write_if_changed(path: &std::path::Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("a generated file written");
    }
}

/// The generated kernels and the library-alone CPU forms of the one-lane ones.
struct Generated {
    out: std::path::PathBuf,
    files: Vec<std::path::PathBuf>,
    as_wgsl: String,
}

impl Generated {
    /// Writes the kernel `block`; a one-lane kernel's CPU form with the library's WGSL alone is
    /// kept with `buffers` (one flag per buffer) for `library_as_wgsl.rs`.
    fn kernel(&mut self, block: &str, text: &str, library_form: Option<&[bool]>) {
        let path = self.out.join(format!("{block}.wgsl"));
        write_if_changed(&path, text);
        if let Some(buffers) = library_form {
            let kernel = xcd_forms::Kernel::from_wgsl(text, block).expect("the test kernel is exact");
            let cpu = kernel.rust_library_as_wgsl(buffers).expect("its CPU form");
            self.as_wgsl.push_str(&format!("/// `{block}` with the library's WGSL alone.\n"));
            self.as_wgsl.push_str("#[allow(unused, non_snake_case, clippy::all, clippy::pedantic)]\n");
            self.as_wgsl.push_str(&format!("pub mod {block} {{\n{cpu}}}\n\n"));
        }
        self.files.push(path);
    }

    /// One kernel per one-argument function and lane count.
    fn functions(&mut self) {
        for fun in FUNCTIONS {
            for (lanes, elem) in [(1, "f32"), (4, "vec4<f32>")] {
                let block = format!("{}_{lanes}", snake(fun));
                let text = TEMPLATE.replace("BLOCK", &block).replace("FUN", fun).replace("ELEM", elem);
                self.kernel(&block, &text, (lanes == 1).then_some(&[true, true][..]));
            }
        }
    }

    /// One rate kernel per function, and one that calls none.
    fn rates(&mut self) {
        for fun in FUNCTIONS.iter().copied().chain(["unchanged"]) {
            let block = format!("rate_{}", snake(fun));
            let (scale, offset) = rate_range(fun);
            let text = RATE_TEMPLATE
                .replace("BLOCK", &block)
                .replace("FUN(", &format!("{fun}("))
                .replace("FUN's", fun)
                .replace("SCALE", scale)
                .replace("OFFSET", offset);
            self.kernel(&block, &text, None);
        }
    }

    /// One kernel per two-argument function and lane count.
    fn pairs(&mut self) {
        for (name, second, call) in PAIRS {
            for (lanes, elem) in [(1, "f32"), (4, "vec4<f32>")] {
                let block = format!("{name}_{lanes}");
                let second = if lanes == 1 { (*second).to_owned() } else { format!("vec4<{second}>") };
                let three = call.contains("z[i]");
                let third = if three { "@group(0) @binding(3) var<storage, read> z: array<ELEM>;\n" } else { "" };
                let text = PAIR_TEMPLATE
                    .replace("THIRD", third)
                    .replace("OUT", if three { "4" } else { "3" })
                    .replace("BLOCK", &block)
                    .replace("CALL", call)
                    .replace("SECOND", &second)
                    .replace("ELEM", elem);
                let buffers = if three { &[true; 4][..] } else { &[true; 3][..] };
                self.kernel(&block, &text, (lanes == 1).then_some(buffers));
            }
        }
    }
}

fn main() {
    let out_dir = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let out = out_dir.join("wgsl");
    std::fs::create_dir_all(&out).expect("a folder for the kernels");
    let as_wgsl = String::from("// @generated by mathcheck's build.rs: the library's WGSL alone.\n\n");
    let mut generated = Generated { out, files: Vec::new(), as_wgsl };
    generated.functions();
    generated.rates();
    generated.pairs();
    for (block, comment, arrays, body) in BLOCKS {
        generated.kernel(block, &whole_kernel(block, comment, arrays, body), None);
    }
    write_if_changed(&out_dir.join("library_as_wgsl.rs"), &generated.as_wgsl);
    println!("cargo::rerun-if-changed=build.rs");
    xcd_build::compile(&generated.files);
}
