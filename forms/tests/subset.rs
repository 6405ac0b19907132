//! What the exact subset and the ABI refuse, and that each refusal names the construct, its line
//! and what to do; and what every PTX form must (not) contain.

use xcd_forms::{FormsError, Kernel, Location};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec};

const HEAD: &str = "struct Tile { start: u32, count: u32, first: u32, a: f32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
";

/// A kernel whose body line 7 (1-based, after the four-line head and the signature) is `line`.
fn kernel(line: &str) -> String {
    format!(
        "{HEAD}@compute @workgroup_size(64)\nfn k(@builtin(global_invocation_id) gid: vec3<u32>) {{\n    let i = tile.first + gid.x;\n    if (i >= tile.count) {{ return; }}\n{line}\n}}\n"
    )
}

fn refused(wgsl: &str) -> FormsError {
    Kernel::from_wgsl(wgsl, "k").expect_err("the kernel is refused")
}

#[test]
fn a_construct_outside_the_subset_is_refused_with_its_line() {
    // naga keeps no span for a type: a matrix is found where the kernel first builds one.
    for (call, column) in [
        ("(mat2x2<f32>(x[i], 0.0, 0.0, 1.0) * vec2<f32>(1.0, 2.0)).x", 13),
        ("x[i] + transpose(mat2x2<f32>(1.0, x[i], 0.0, 1.0))[0].y", 29),
    ] {
        let e = refused(&kernel(&format!("    y[i] = {call};")));
        let FormsError::Unsupported { at, construct, .. } = &e else { panic!("{call}: {e}") };
        assert_eq!(construct, "a matrix type");
        assert_eq!(*at, Some(Location { line: 9, column }), "{call}: {e}");
        let text = e.to_string();
        assert!(text.starts_with(&format!("line 9:{column}: ")), "{text}");
        assert!(text.contains("write the sums out with vectors"), "{text}");
    }
}

#[test]
fn matrices_are_refused_with_what_to_write() {
    let cases = [("    let m = mat2x2<f32>(1.0, 0.0, 0.0, 1.0);\n    y[i] = m[0].x;", "a matrix type", "vectors")];
    for (line, construct, hint) in cases {
        let e = refused(&kernel(line));
        let text = e.to_string();
        assert!(matches!(&e, FormsError::Unsupported { construct: c, .. } if c == construct), "{text}");
        assert!(text.contains(hint), "{text}");
    }
}

#[test]
fn workgroup_memory_atomics_and_group_ids_are_refused() {
    let shared = format!("var<workgroup> s: array<f32, 64>;\n{}", kernel("    s[0] = 1.0;\n    y[i] = s[0];"));
    assert!(refused(&shared).to_string().contains("var<workgroup>"));
    let atomic =
        HEAD.replace("array<f32>;\n", "array<f32>;\n@group(0) @binding(3) var<storage, read_write> n: atomic<u32>;\n");
    let atomic = format!(
        "{atomic}@compute @workgroup_size(64)\nfn k(@builtin(global_invocation_id) gid: vec3<u32>) {{ atomicAdd(&n, 1u); }}\n"
    );
    assert!(refused(&atomic).to_string().contains("atomic"));
    let local = format!(
        "{HEAD}@compute @workgroup_size(64)\nfn k(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{ y[gid.x] = f32(l.x); }}\n"
    );
    assert!(refused(&local).to_string().contains("global_invocation_id"), "{}", refused(&local));
    let overridable = format!("override scale: f32 = 2.0;\n{}", kernel("    y[i] = x[i] * scale;"));
    assert!(refused(&overridable).to_string().contains("override"));
}

#[test]
fn kernels_that_break_the_abi_say_how() {
    let no_header = "@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(64)\nfn k(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = 1.0; }\n";
    assert!(refused(no_header).to_string().contains("a missing tile header"), "{}", refused(no_header));
    let short_header = "struct Tile { start: u32, count: f32 }\n@group(0) @binding(0) var<uniform> tile: Tile;\n@group(0) @binding(1) var<storage, read_write> y: array<f32>;\n@compute @workgroup_size(64)\nfn k(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = tile.count; }\n";
    assert!(refused(short_header).to_string().contains("tile header"), "{}", refused(short_header));
    let gap = kernel("    y[i] = x[i];").replace("@binding(2)", "@binding(3)");
    let text = refused(&gap).to_string();
    assert!(
        text.contains("@binding(3)") && text.contains("should be @binding(2)") && text.starts_with("line 4:"),
        "{text}"
    );
    let size = kernel("    y[i] = x[i];").replace("@workgroup_size(64)", "@workgroup_size(32)");
    assert!(refused(&size).to_string().contains("@workgroup_size(64)"));
    let vec_param = kernel("    y[i] = x[i];").replace("a: f32 }", "a: vec2<f32> }");
    assert!(refused(&vec_param).to_string().contains("not one 32-bit word"));
    let group = kernel("    y[i] = x[i];").replace("@group(0) @binding(2)", "@group(1) @binding(2)");
    assert!(refused(&group).to_string().contains("@group(0)"));
}

fn desc(params: Vec<ParamKind>, arrays: Vec<(ArrayRole, u32)>) -> BlockDesc {
    BlockDesc {
        name: "b".into(),
        entry: "k".into(),
        arrays: arrays
            .into_iter()
            .enumerate()
            .map(|(k, (role, elem_size))| ArraySpec { name: format!("a{k}"), elem_size, role })
            .collect(),
        params: params.into_iter().enumerate().map(|(k, kind)| ParamSpec { name: format!("p{k}"), kind }).collect(),
        forms: Forms { wgsl: Some(kernel("    y[i] = tile.a * x[i];")), ..Forms::default() },
    }
}

#[test]
fn a_description_that_differs_from_the_kernel_is_refused() {
    let right =
        desc(vec![ParamKind::F32], vec![(ArrayRole::PerItem(Access::In), 4), (ArrayRole::PerItem(Access::Out), 4)]);
    Kernel::for_block(&right).expect("the matching description");
    let whole = desc(vec![ParamKind::F32], vec![(ArrayRole::Whole, 4), (ArrayRole::PerItem(Access::InOut), 4)]);
    Kernel::for_block(&whole).expect("an input may be whole, an output read and written");
    let cases = [
        (
            desc(vec![ParamKind::U32], vec![(ArrayRole::PerItem(Access::In), 4), (ArrayRole::PerItem(Access::Out), 4)]),
            "parameter p0 is u32 in the block and a: f32 in the kernel",
        ),
        (
            desc(vec![], vec![(ArrayRole::PerItem(Access::In), 4), (ArrayRole::PerItem(Access::Out), 4)]),
            "1 parameters after the tile header, the block 0",
        ),
        (
            desc(
                vec![ParamKind::F32],
                vec![(ArrayRole::PerItem(Access::Out), 4), (ArrayRole::PerItem(Access::Out), 4)],
            ),
            "@binding(1) x is var<storage, read>",
        ),
        (
            desc(vec![ParamKind::F32], vec![(ArrayRole::PerItem(Access::In), 8), (ArrayRole::PerItem(Access::Out), 4)]),
            "elements of 4 bytes in the kernel and array a0 of 8",
        ),
        (
            desc(vec![ParamKind::F32], vec![(ArrayRole::PerItem(Access::Out), 4)]),
            "binds 2 arrays, the block declares 1",
        ),
    ];
    for (d, words) in cases {
        let e = Kernel::for_block(&d).expect_err("a mismatch");
        assert!(matches!(e, FormsError::Mismatch(_)), "{e}");
        assert!(e.to_string().contains(words), "{e}");
    }
}

#[test]
fn huge_and_deeply_nested_kernels_are_refused_or_made_without_a_crash() {
    let deep = kernel(&format!("    y[i] = {}x[i]{};", "(".repeat(5000), ")".repeat(5000)));
    assert!(Kernel::from_wgsl(&deep, "k").is_err(), "naga's own recursion limit");
    // A chain of operators: naga's front end recurses once per operator (5,000 overflowed a
    // 2 MiB stack, a daemon thread's), so statements are bounded and naga runs on a big stack.
    let chain = |n: usize| kernel(&format!("    y[i] = x[i]{};", "+x[i]".repeat(n)));
    let near = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || Kernel::from_wgsl(&chain(900), "k").and_then(|k| k.ptx()));
    assert!(
        near.expect("a thread").join().expect("no overflow").is_ok(),
        "900 operators are read, on any caller's stack"
    );
    let e = refused(&kernel(&format!("    y[i] = x[i]{};", "+x[i]".repeat(50_000))));
    assert!(e.to_string().starts_with("line 9:5: a statement of more than 1000 operators"), "{e}");
    let big = format!("{}{}", kernel("    y[i] = x[i];"), "// padding\n".repeat(120_000));
    assert!(refused(&big).to_string().contains("at most 1048576 are read"));
    let nested =
        kernel(&format!("{}    y[i] = 1.0;\n{}", "    if (x[i] > 0.0) {\n".repeat(300), "    }\n".repeat(300)));
    match Kernel::from_wgsl(&nested, "k").and_then(|k| k.ptx()) {
        Ok(ptx) => assert!(ptx.contains("st.global")),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

#[test]
fn every_example_kernel_is_exact_in_every_form() {
    for name in ["escape", "saxpy", "poly"] {
        let path = format!("{}/../kernels/wgsl/{name}.wgsl", env!("CARGO_MANIFEST_DIR"));
        let wgsl = std::fs::read_to_string(&path).expect("the example kernel");
        let forms = xcd_forms::make_forms(&wgsl, name).expect("forms");
        for banned in ["fma", "mad.f32", "mad.rn", ".ftz", ".approx", "div.full", "sqrt.approx", "ex2", "lg2"] {
            assert!(!forms.ptx.contains(banned), "{name}'s PTX contains {banned}");
        }
        for line in forms.ptx.lines().map(str::trim) {
            let float_arith =
                ["add.", "sub.", "mul.", "div."].iter().any(|op| line.starts_with(op)) && line.contains(".f32");
            assert!(
                !float_arith || line.contains(".rn.f32"),
                "{name}: {line} is not rounded to nearest, so ptxas may contract it"
            );
        }
        assert_eq!(xcd_forms::make_forms(&wgsl, name).expect("again"), forms, "{name}: forms are not deterministic");
    }
}

#[test]
fn a_spirv_form_makes_the_same_kernel() {
    let wgsl = kernel("    y[i] = tile.a * x[i] + 1.0;");
    let made = xcd_forms::make_forms(&wgsl, "k").expect("forms");
    let from_spirv = Kernel::from_spirv(&made.spirv, "k").expect("the SPIR-V reads back");
    let (a, b) = (from_spirv.interface(), Kernel::from_wgsl(&wgsl, "k").expect("the WGSL").interface().clone());
    assert_eq!(a.params.iter().map(|p| p.1).collect::<Vec<_>>(), b.params.iter().map(|p| p.1).collect::<Vec<_>>());
    let shape = |i: &xcd_forms::Interface| i.arrays.iter().map(|a| (a.read_only, a.stride)).collect::<Vec<_>>();
    assert_eq!(shape(a), shape(&b));
    let ptx = from_spirv.ptx().expect("PTX from SPIR-V");
    assert!(ptx.contains("mul.rn.f32") && ptx.contains("add.rn.f32"), "{ptx}");
}

#[test]
fn the_math_library_keeps_to_the_exact_subset_itself() {
    let module = naga::front::wgsl::parse_str(xcd_forms::MATH_LIBRARY).expect("the library parses");
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::default())
        .validate(&module)
        .expect("the library validates");
    xcd_forms::subset::check(&module, Some(xcd_forms::MATH_LIBRARY)).expect("the library is in the exact subset");
}

#[test]
fn a_library_function_of_a_constant_is_refused_as_the_reader_would_round_it_itself() {
    // naga's reader evaluates these when it reads the kernel, with the host's own exp.
    for call in [
        "exp(2.0)",
        "exp2(vec2<f32>(1.5, 3.0)).x",
        "x[i] + exp(c)",
        "log(2.0)",
        "x[i] * log2(c)",
        "sin(1.0)",
        "cos(c) * x[i]",
        "tanh(c) * x[i]",
        "acosh(2.0)",
    ] {
        let e = Kernel::from_wgsl(&kernel(&format!("    const c = 0.5;\n    y[i] = {call};")), "k")
            .err()
            .unwrap_or_else(|| panic!("{call} is refused"));
        let FormsError::Unsupported { at, construct, .. } = &e else { panic!("{call}: {e}") };
        assert!(construct.ends_with("() of a value known when the kernel is read"), "{call}: {construct}");
        assert!(at.is_some(), "{call}: {e}");
    }
    // The packing builtins, which naga does not fold, and the packed dot products, which it folds
    // exactly in integers, take constant arguments.
    let constant = kernel("    y[i] = unpack4x8snorm(7u).x + f32(dot4I8Packed(0x01ff7f80u, 0x80ff017fu));");
    Kernel::from_wgsl(&constant, "k").expect("constant packing calls are fine");
    // Calls of values the kernel computes are not, nor calls in comments.
    let fine = kernel(
        "    // exp(1.0)\n    /* exp2(2.0) /* nested */ */\n    y[i] = exp(x[i]) + exp2 (x[i]) + sin(x[i]) * cos(x[i]) + sinh(x[i]) + atanh(x[i]);",
    );
    Kernel::from_wgsl(&fine, "k").expect("a computed argument reaches the library");
}
