//! Writes the seed inputs of each fuzz target into `fuzz/corpus/<target>/seed-*`, from the real
//! encoders and the example kernels, so a fuzz run starts from inputs that reach deep. Run from
//! `fuzz/`: `cargo run --example seeds`. The corpora in the repository began as these seeds.

use std::collections::BTreeMap;
use std::path::Path;

use xcd_wire::trace::{TraceRun, TraceSpan, TraceWorker, WorkerKind};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec, ResultFrame, Tile, TileFrame};

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    std::fs::create_dir_all(&dir).expect("corpus folder");
    std::fs::write(dir.join(format!("seed-{name}")), bytes).expect("seed written");
}

fn block(name: &str, wgsl: &str, arrays: Vec<ArraySpec>, params: Vec<ParamSpec>) -> BlockDesc {
    let made = xcd_forms::make_forms(wgsl, name).expect("the example kernel makes forms");
    BlockDesc {
        name: name.into(),
        entry: name.into(),
        arrays,
        params,
        forms: Forms { wgsl: Some(wgsl.into()), spirv: Some(made.spirv), msl: None, ptx: None },
    }
}

fn array(name: &str, role: ArrayRole) -> ArraySpec {
    ArraySpec { name: name.into(), elem_size: 4, role }
}

fn main() {
    frames();
    blocks();
    settings();
    trace();
}

/// A tile stream: a tile, a result and a refusal; and a tile alone.
fn frames() {
    let tile = TileFrame {
        tag: 7,
        tile: Tile { start: 100, count: 3 },
        params: vec![640, 480, 200],
        wholes: vec![xcd_wire::ArrayHash([9; 32])],
        inputs: vec![1; 12].into(),
    };
    let done = ResultFrame::Done { tag: 7, outputs: vec![4; 12].into() };
    let failed = ResultFrame::Failed {
        tag: 8,
        problem: xcd_wire::TileProblem { code: "bad_frame".into(), detail: "the tile is past the block".into() },
    };
    let mut stream = vec![3, 0, 7, 1];
    stream.extend(tile.encode());
    stream.extend(done.encode());
    stream.extend(failed.encode());
    write("frame", "stream", &stream);
    write("frame", "tile", &[&[0u8, 0, 0, 0][..], &tile.encode()].concat());
}

/// Two kernels' block descriptions, and one's SPIR-V.
fn blocks() {
    let poly = block(
        "poly",
        include_str!("../../kernels/wgsl/poly.wgsl"),
        vec![
            array("x", ArrayRole::PerItem(Access::In)),
            array("coef", ArrayRole::Whole),
            array("y", ArrayRole::PerItem(Access::Out)),
        ],
        vec![ParamSpec { name: "terms".into(), kind: ParamKind::U32 }],
    );
    let escape = block(
        "escape",
        include_str!("../../kernels/wgsl/escape.wgsl"),
        vec![array("counts", ArrayRole::PerItem(Access::Out))],
        ["width", "height", "max_iter"].iter().map(|n| ParamSpec { name: (*n).into(), kind: ParamKind::U32 }).collect(),
    );
    for desc in [&poly, &escape] {
        write("block", &desc.name, &serde_json::to_vec(desc).expect("json"));
    }
    let words = poly.forms.spirv.as_deref().unwrap_or_default();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    write("block_spirv", "poly", &bytes);
}

/// A settings file with a pin and a placement.
fn settings() {
    let mut settings = BTreeMap::new();
    settings.insert("tls.pin.gpu-box:7227".to_owned(), "ab".repeat(32));
    settings.insert("placement.escape.0123456789ab.20".to_owned(), "cpu+remote".to_owned());
    let text = xcd_home::render(&settings).expect("settings");
    write("settings", "file", format!("# xcd program settings\n{text}").as_bytes());
}

/// Trace lines: a record, a line that is not one, the record again.
fn trace() {
    let run = TraceRun {
        version: xcd_wire::VERSION.into(),
        program: "escape".into(),
        pid: 4242,
        source: "examples/escape/src/main.rs:80".into(),
        block: "escape".into(),
        items: 1 << 20,
        tiles: 96,
        started_ms: 1_764_000_000_000,
        seconds: 0.75,
        placement: Some("measured: remote".into()),
        workers: vec![
            TraceWorker {
                kind: WorkerKind::Cpu,
                name: "cpu".into(),
                items: 1 << 19,
                tiles: 40,
                busy_seconds: 0.7,
                failure: None,
            },
            TraceWorker {
                kind: WorkerKind::Remote,
                name: "remote:gpu-box:7227/vulkan:llvmpipe".into(),
                items: 1 << 19,
                tiles: 56,
                busy_seconds: 0.7,
                failure: Some("the daemon stopped answering".into()),
            },
        ],
        spans: vec![
            TraceSpan {
                worker: 0,
                lane: 0,
                start_us: 0,
                end_us: 40_000,
                items: 4096,
                tiles: 1,
                failed: false,
                measuring: true,
            },
            TraceSpan {
                worker: 1,
                lane: 2,
                start_us: 5_000,
                end_us: 90_000,
                items: 8192,
                tiles: 4,
                failed: true,
                measuring: false,
            },
        ],
        merged: true,
    };
    let mut lines = run.to_line();
    lines.extend(b"not a record\n");
    lines.extend(run.to_line());
    write("trace", "lines", &lines);
}
