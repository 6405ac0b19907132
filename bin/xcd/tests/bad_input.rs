//! The bad-input suite: fifty-six kinds of malformed, hostile or out-of-range input sent to a
//! live daemon over real TLS and HTTP/2, each answered with its stable code and a sentence that
//! says what to do, while a canary client keeps running correct tiles on its own connection
//! (every one must come back right), the daemon's memory stays bounded, and it keeps serving.
//! The table of cases and outcomes is written to `target/tmp/reliability/bad-input.md`
//! (docs/reliability.md holds it): `cargo test -p xcd --test bad_input -- --nocapture`.

mod common;

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use futures_util::StreamExt;
use xcd_e2e::Daemon;
use xcd_wire::frame::STREAM_TAG;
use xcd_wire::rest::Problem;
use xcd_wire::{FrameSplitter, ResultFrame, Tile, TileFrame};

/// What a case got: HTTP status, the problem's code (or `ok`), and its sentence.
struct Outcome {
    status: u16,
    code: String,
    detail: String,
}

async fn outcome(response: reqwest::Response) -> Outcome {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    match serde_json::from_str::<Problem>(&text) {
        Ok(p) => Outcome { status, code: p.code, detail: p.detail },
        Err(_) => Outcome { status, code: "ok".into(), detail: text.chars().take(60).collect() },
    }
}

/// Sends a tile-stream body; the outcome of its first result frame (or of the refusal).
async fn stream(daemon: &Daemon, id: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Outcome {
    // `id?query` puts the query after the path.
    let (id, query) = id.split_once('?').unwrap_or((id, ""));
    let url = daemon.url(&format!("/v1/blocks/{id}/tiles?{query}"));
    let mut request = xcd_e2e::client().post(url).header("authorization", auth());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.body(body).send().await.expect("sent");
    if !response.status().is_success() {
        return outcome(response).await;
    }
    let status = response.status().as_u16();
    let mut splitter = FrameSplitter::new(1 << 30);
    let mut body = response.bytes_stream();
    loop {
        if let Some(frame) = splitter.next_frame().expect("the daemon's framing") {
            return match ResultFrame::decode(&frame).expect("a result frame") {
                ResultFrame::Done { tag, outputs } => {
                    Outcome { status, code: "ok".into(), detail: format!("tag {tag}: {} bytes", outputs.len()) }
                }
                ResultFrame::Failed { tag, problem } => {
                    let at = if tag == STREAM_TAG { "the stream".to_owned() } else { format!("tag {tag}") };
                    Outcome { status, code: problem.code, detail: format!("{at}: {}", problem.detail) }
                }
            };
        }
        match tokio::time::timeout(Duration::from_secs(90), body.next()).await {
            Ok(Some(Ok(chunk))) => splitter.push(&chunk),
            Ok(Some(Err(e))) => return Outcome { status, code: "reset".into(), detail: e.to_string() },
            Ok(None) => return Outcome { status, code: "ended".into(), detail: "no result frame".into() },
            Err(_) => panic!("no answer in 90 s"),
        }
    }
}

fn frame(
    tag: u32,
    start: u32,
    count: u32,
    params: Vec<u32>,
    wholes: Vec<xcd_wire::ArrayHash>,
    inputs: Vec<u8>,
) -> Vec<u8> {
    TileFrame { tag, tile: Tile { start, count }, params, wholes, inputs: inputs.into() }.encode()
}

#[tokio::test(flavor = "multi_thread")]
async fn forty_kinds_of_bad_input_get_clear_errors_and_harm_no_one() {
    // Without backtraces: the caught naga panic below would otherwise load the binary's debug
    // info into the symbolizer's cache (about 185 MB once, with RUST_BACKTRACE=1), which is not
    // what this test's memory bound is about.
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).env("RUST_BACKTRACE", "0").start();
    let escape = register(&daemon, "escape").await;
    let saxpy = register(&daemon, "saxpy").await;
    let client = xcd_e2e::client();
    let url = |path: &str| daemon.url(path);

    // The canary: correct single tiles on a connection of its own, all through the suite.
    let stop = Arc::new(AtomicU64::new(0));
    let (good, bad) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let canary = {
        let (stop, good, bad) = (stop.clone(), good.clone(), bad.clone());
        let tile = url(&format!("/v1/blocks/{escape}/tile?start=8808090&count=8&params=4096,4096,2000"));
        let want = escape_expected(8_808_090, 8, 4096, 4096, 2000);
        tokio::spawn(async move {
            let client = xcd_e2e::client();
            while stop.load(Ordering::SeqCst) == 0 {
                let got = client.post(&tile).header("authorization", auth()).send().await;
                let ok = match got {
                    Ok(r) if r.status().is_success() => r.bytes().await.map(|b| b.to_vec() == want).unwrap_or(false),
                    _ => false,
                };
                if ok { &good } else { &bad }.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let rss_before = daemon.rss_kib();

    let mut rows: Vec<(&str, &str, Outcome)> = Vec::new();
    macro_rules! case {
        ($name:expr, $want:expr, $outcome:expr) => {{
            let got: Outcome = $outcome;
            rows.push(($name, $want, got));
        }};
    }
    let get = |path: &str| client.get(url(path)).header("authorization", auth());
    let post = |path: &str| client.post(url(path)).header("authorization", auth());

    // Who may ask (at most three wrong secrets: more would hold this address back, and the canary).
    case!("no secret", "secret_refused", outcome(client.get(url("/v1/devices")).send().await.expect("sent")).await);
    case!(
        "a wrong secret",
        "secret_refused",
        outcome(client.get(url("/v1/devices")).bearer_auth("wrong").send().await.expect("sent")).await
    );
    case!(
        "Authorization that is not a bearer",
        "secret_refused",
        outcome(client.get(url("/v1/devices")).header("authorization", "Basic eDp5").send().await.expect("sent")).await
    );
    case!(
        "Authorization that is not text",
        "secret_refused",
        outcome(
            client
                .get(url("/v1/devices"))
                .header("authorization", reqwest::header::HeaderValue::from_bytes(b"Bearer \xff\xfe").expect("bytes"))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "another xcc version",
        "version_mismatch",
        outcome(get("/v1/version").header("xc-version", "0.0.1").send().await.expect("sent")).await
    );
    case!(
        "another data layout",
        "layout_mismatch",
        outcome(get("/v1/version").header("xc-layout", "big-64").send().await.expect("sent")).await
    );
    case!(
        "a layout that is not one",
        "bad_request",
        outcome(get("/v1/version").header("xc-layout", "sideways-7").send().await.expect("sent")).await
    );
    case!("an unknown endpoint", "not_found", outcome(get("/v1/nothing").send().await.expect("sent")).await);
    case!(
        "a method the endpoint does not take",
        "method_not_allowed",
        outcome(client.delete(url("/v1/devices")).header("authorization", auth()).send().await.expect("sent")).await
    );

    // Registering blocks.
    let block_json = |f: &dyn Fn(&mut serde_json::Value)| {
        let block = xcd_kernels::all().into_iter().find(|b| b.desc.name == "escape").expect("escape");
        let mut value = serde_json::to_value(&*block.desc).expect("json");
        f(&mut value);
        serde_json::to_vec(&value).expect("json")
    };
    case!(
        "a block that is not JSON",
        "bad_request",
        outcome(post("/v1/blocks").body("{nope").send().await.expect("sent")).await
    );
    case!("an empty block", "bad_request", outcome(post("/v1/blocks").body("").send().await.expect("sent")).await);
    case!(
        "100000 nested brackets",
        "bad_request",
        outcome(post("/v1/blocks").body("[".repeat(100_000)).send().await.expect("sent")).await
    );
    case!(
        "a block missing its fields",
        "bad_request",
        outcome(post("/v1/blocks").body("{}").send().await.expect("sent")).await
    );
    case!(
        "a field of the wrong type",
        "bad_request",
        outcome(post("/v1/blocks").body(block_json(&|v| v["name"] = 5.into())).send().await.expect("sent")).await
    );
    case!(
        "a block over 32 MiB",
        "too_large",
        outcome(post("/v1/blocks").body(vec![b' '; 33 << 20]).send().await.expect("sent")).await
    );
    case!(
        "nine arrays",
        "bad_request",
        outcome(
            post("/v1/blocks")
                .body(block_json(&|v| {
                    let one = v["arrays"][0].clone();
                    v["arrays"] = serde_json::Value::Array(vec![one; 9]);
                }))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "an element of 3 bytes",
        "bad_request",
        outcome(
            post("/v1/blocks")
                .body(block_json(&|v| v["arrays"][0]["elem_size"] = 3.into()))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "no form at all",
        "bad_request",
        outcome(
            post("/v1/blocks")
                .body(block_json(
                    &|v| v["forms"] = serde_json::json!({"wgsl": null, "spirv": null, "msl": null, "ptx": null})
                ))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "only a form the device cannot take (PTX on Vulkan)",
        "no_form",
        outcome(
            post("/v1/blocks")
                .body(block_json(&|v| {
                    v["forms"] = serde_json::json!({"wgsl": null, "spirv": null, "msl": null, "ptx": ".version 8.0"})
                }))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "SPIR-V that is garbage (and no WGSL)",
        "load_failed",
        outcome(
            post("/v1/blocks")
                .body(block_json(&|v| v["forms"] = serde_json::json!({ "spirv": [119734787, 1, 2, 3, 4, 5] })))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    // Found by fuzzing (fuzz/corpus/block_spirv): naga's SPIR-V reader panics on it. Before the
    // panic was caught it took the device out of service; now it is a refusal like any other.
    let panicking: Vec<u32> = include_bytes!("../../../forms/tests/data/naga-spv-panic.bin")
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    case!(
        "SPIR-V on which naga's reader panics",
        "load_failed",
        outcome(
            post("/v1/blocks")
                .body(block_json(&|v| {
                    v["forms"] = serde_json::json!({ "spirv": panicking.clone() });
                }))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "a NUL byte in the entry point",
        "bad_request",
        outcome(post("/v1/blocks").body(block_json(&|v| v["entry"] = "esc\0ape".into())).send().await.expect("sent"))
            .await
    );
    case!(
        "a NUL byte in the PTX form",
        "bad_request",
        outcome(
            post("/v1/blocks")
                .body(block_json(&|v| v["forms"]["ptx"] = ".version 6.0\0".into()))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "an entry point the kernel lacks",
        "load_failed",
        outcome(post("/v1/blocks").body(block_json(&|v| v["entry"] = "nowhere".into())).send().await.expect("sent"))
            .await
    );

    // Blocks that carry only WGSL, as a REST client writes them: the daemon reads the kernel
    // once, before any device loads it, and refuses it with the construct and its line.
    let wgsl_only = |edit: &dyn Fn(&str) -> String| {
        let escape = xcd_kernels::escape();
        let wgsl = edit(escape.desc.forms.wgsl.as_deref().expect("escape's WGSL"));
        block_json(&|v| v["forms"] = serde_json::json!({ "wgsl": wgsl }))
    };
    case!(
        "WGSL that does not parse",
        "load_failed",
        outcome(
            post("/v1/blocks").body(wgsl_only(&|w| w.replace("let item", "let item item"))).send().await.expect("sent")
        )
        .await
    );
    case!(
        "WGSL with a construct outside the exact subset (a matrix)",
        "load_failed",
        outcome(
            post("/v1/blocks")
                .body(wgsl_only(&|w| w.replace("n = n + 1u;", "n = n + u32(mat2x2<f32>(f32(x), 0.0, 0.0, 1.0)[0].x);")))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    let mismatched = {
        let escape = xcd_kernels::escape();
        let wgsl = escape.desc.forms.wgsl.clone();
        block_json(&|v| {
            v["forms"] = serde_json::json!({ "wgsl": wgsl });
            v["arrays"][0]["elem_size"] = 8.into();
        })
    };
    case!(
        "WGSL whose bindings differ from the description",
        "load_failed",
        outcome(post("/v1/blocks").body(mismatched).send().await.expect("sent")).await
    );
    case!(
        "WGSL with a statement of 100000 operators",
        "load_failed",
        outcome(
            post("/v1/blocks")
                .body(wgsl_only(&|w| w.replace("n = n + 1u;", &format!("n = n{};", " + 1u".repeat(100_000)))))
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "WGSL nested 300 blocks deep",
        "load_failed",
        outcome(
            post("/v1/blocks")
                .body(wgsl_only(&|w| w
                    .replace("n = n + 1u;", &format!("{}n = n + 1u;{}", "if (n < 9u) {".repeat(300), "}".repeat(300)))))
                .send()
                .await
                .expect("sent")
        )
        .await
    );

    // Whole arrays.
    let hash_of = |b: &[u8]| xcd_wire::content_hash(b).iter().map(|x| format!("{x:02x}")).collect::<String>();
    case!(
        "an array whose bytes do not hash to its name",
        "bad_request",
        outcome(
            client
                .put(url(&format!("/v1/arrays/{}", hash_of(b"other"))))
                .header("authorization", auth())
                .body(vec![1u8; 8])
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "an array name that is not a SHA-256",
        "bad_request",
        outcome(
            client
                .put(url("/v1/arrays/xyz"))
                .header("authorization", auth())
                .body(vec![1u8; 8])
                .send()
                .await
                .expect("sent")
        )
        .await
    );
    case!(
        "an array not held",
        "unknown_array",
        outcome(get(&format!("/v1/arrays/{}", "ab".repeat(32))).send().await.expect("sent")).await
    );

    // One tile per request.
    let tile = |q: &str| post(&format!("/v1/blocks/{escape}/tile?{q}"));
    case!(
        "an unknown block",
        "unknown_block",
        outcome(post(&format!("/v1/blocks/{}/tile?count=1&params=1,1,1", "cd".repeat(32))).send().await.expect("sent"))
            .await
    );
    case!(
        "a block id that is not hex",
        "bad_request",
        outcome(post("/v1/blocks/zz/tile?count=1&params=1,1,1").send().await.expect("sent")).await
    );
    case!("a tile without a count", "bad_request", outcome(tile("params=1,1,1").send().await.expect("sent")).await);
    case!(
        "a count that is not a number",
        "bad_request",
        outcome(tile("count=many&params=1,1,1").send().await.expect("sent")).await
    );
    case!("too few parameters", "bad_request", outcome(tile("count=1&params=1,1").send().await.expect("sent")).await);
    case!(
        "a parameter of the wrong type",
        "bad_request",
        outcome(tile("count=1&params=1,x,1").send().await.expect("sent")).await
    );
    case!(
        "a whole array that is not a SHA-256",
        "bad_request",
        outcome(tile("count=1&params=1,1,1&whole=12").send().await.expect("sent")).await
    );
    case!(
        "a device not served",
        "unknown_device",
        outcome(tile("count=1&params=1,1,1&device=7").send().await.expect("sent")).await
    );
    case!(
        "results over the frame limit",
        "too_large",
        outcome(tile("count=4000000000&params=1,1,1").send().await.expect("sent")).await
    );
    case!(
        "a tile past the last item index",
        "bad_frame",
        outcome(tile("start=4294967295&count=2&params=1,1,1").send().await.expect("sent")).await
    );
    case!("a tile of no items", "bad_frame", outcome(tile("count=0&params=1,1,1").send().await.expect("sent")).await);
    case!(
        "inputs of the wrong size",
        "bad_frame",
        outcome(
            post(&format!("/v1/blocks/{saxpy}/tile?count=4&params=0.5"))
                .body(vec![0u8; 31])
                .send()
                .await
                .expect("sent")
        )
        .await
    );

    // The tile stream.
    let good_frame = frame(1, 0, 16, vec![4, 4, 10], vec![], vec![]);
    case!(
        "a stream of garbage",
        "bad_frame",
        stream(&daemon, &escape, &[], b"\x08\x00\x00\x00garbage!".to_vec()).await
    );
    case!(
        "a stream that ends inside a frame",
        "bad_frame",
        stream(&daemon, &escape, &[], good_frame[..good_frame.len() - 3].to_vec()).await
    );
    case!(
        "a frame length of 4 GiB",
        "bad_frame",
        stream(&daemon, &escape, &[], vec![0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0]).await
    );
    case!(
        "a frame shorter than its header",
        "bad_frame",
        stream(&daemon, &escape, &[], vec![4, 0, 0, 0, 1, 0, 0, 0]).await
    );
    let mut wrong_kind = good_frame.clone();
    wrong_kind[4] = 7;
    case!("a frame of an unknown kind", "bad_frame", stream(&daemon, &escape, &[], wrong_kind).await);
    case!(
        "a frame with too few parameters",
        "bad_frame",
        stream(&daemon, &escape, &[], frame(2, 0, 16, vec![4, 4], vec![], vec![])).await
    );
    case!(
        "a frame with inputs of the wrong size",
        "bad_frame",
        stream(&daemon, &saxpy, &[], frame(3, 0, 4, vec![0], vec![], vec![0; 33])).await
    );
    case!(
        "a frame naming an array not held",
        "unknown_array",
        stream(&daemon, &escape, &[], frame(4, 0, 16, vec![4, 4, 10], vec![xcd_wire::ArrayHash([7; 32])], vec![]))
            .await
    );
    case!(
        "a frame past the last item index",
        "bad_frame",
        stream(&daemon, &escape, &[], frame(5, u32::MAX, 2, vec![4, 4, 10], vec![], vec![])).await
    );
    case!(
        "a frame tagged 0xFFFFFFFF, the daemon's own tag",
        "bad_frame",
        stream(&daemon, &escape, &[], frame(STREAM_TAG, 0, 16, vec![4, 4, 10], vec![], vec![])).await
    );
    case!(
        "a frame of no items",
        "bad_frame",
        stream(&daemon, &escape, &[], frame(7, 0, 0, vec![4, 4, 10], vec![], vec![])).await
    );
    case!(
        "a frame whose results exceed the frame limit",
        "too_large",
        stream(&daemon, &escape, &[], frame(6, 0, u32::MAX, vec![4, 4, 10], vec![], vec![])).await
    );
    case!(
        "a run size that is not a number",
        "bad_request",
        stream(&daemon, &escape, &[("xc-run-items", "lots")], good_frame.clone()).await
    );
    case!(
        "a run too large for the device's memory",
        "declined_memory",
        stream(&daemon, &saxpy, &[("xc-run-items", "1000000000000000")], good_frame.clone()).await
    );
    case!(
        "a stream for an unknown block",
        "unknown_block",
        stream(&daemon, &"ef".repeat(32), &[], good_frame.clone()).await
    );
    case!(
        "a stream for a device not served",
        "unknown_device",
        stream(&daemon, &format!("{escape}?device=nine"), &[], good_frame.clone()).await
    );
    case!("a correct frame after all that", "ok", stream(&daemon, &escape, &[], good_frame.clone()).await);

    // Let the canary finish a few more before it stops, however fast the suite was.
    let enough = good.load(Ordering::SeqCst) + bad.load(Ordering::SeqCst) + 5;
    for _ in 0..300 {
        if good.load(Ordering::SeqCst) + bad.load(Ordering::SeqCst) >= enough {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(1, Ordering::SeqCst);
    canary.await.expect("the canary ran");
    let rss_after = daemon.rss_kib();

    // The table, for docs/reliability.md.
    let mut table =
        String::from("| # | input | expected | status | code | the daemon's words |\n|---|---|---|---|---|---|\n");
    let mut wrong = Vec::new();
    for (i, (name, want, got)) in rows.iter().enumerate() {
        let words: String =
            got.detail.replace('|', "/").split_whitespace().collect::<Vec<_>>().join(" ").chars().take(110).collect();
        let _ = writeln!(table, "| {} | {name} | `{want}` | {} | `{}` | {words} |", i + 1, got.status, got.code);
        if got.code != *want {
            wrong.push(format!("{name}: expected {want}, got {} {} ({})", got.status, got.code, got.detail));
        }
        if *want != "ok" {
            assert!(got.detail.len() > 20, "{name}: a sentence that says what to do, not {:?}", got.detail);
        }
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reliability");
    std::fs::create_dir_all(&dir).expect("a folder");
    std::fs::write(dir.join("bad-input.md"), &table).expect("written");
    println!("{table}");
    let (good, bad) = (good.load(Ordering::SeqCst), bad.load(Ordering::SeqCst));
    println!(
        "canary: {good} right tiles, {bad} wrong or refused; daemon RSS {rss_before} KiB before, {rss_after} KiB after"
    );
    assert!(rows.len() >= 40, "{} cases", rows.len());
    assert!(wrong.is_empty(), "cases answered otherwise:\n{}", wrong.join("\n"));
    let detail = |name: &str| rows.iter().find(|r| r.0 == name).map(|r| r.2.detail.clone()).unwrap_or_default();
    let refused = detail("WGSL with a construct outside the exact subset (a matrix)");
    assert!(refused.contains(": line ") && refused.contains("a matrix type is not in the exact subset"), "{refused}");
    let mismatch = detail("WGSL whose bindings differ from the description");
    assert!(mismatch.contains("elements of 4 bytes in the kernel and array counts of 8"), "{mismatch}");
    let long = detail("WGSL with a statement of 100000 operators");
    assert!(long.contains("more than 1000 operators"), "{long}");
    let reserved = detail("a frame tagged 0xFFFFFFFF, the daemon's own tag");
    assert!(reserved.starts_with("tag 4294967294: tag 0xffffffff is reserved"), "answered as unanswerable: {reserved}");
    assert!(detail("a block id that is not hex").contains("64 hex digits"));
    assert!(detail("a NUL byte in the PTX form").contains("its PTX form holds a NUL byte"));
    assert!(good >= 5 && bad == 0, "the canary: {good} right, {bad} wrong");
    assert!(rss_after < rss_before + 256 * 1024, "memory grew from {rss_before} to {rss_after} KiB");
    let health = xcd_e2e::client().get(daemon.url("/healthz")).send().await.expect("still serving");
    assert_eq!(health.status(), 200);
}
