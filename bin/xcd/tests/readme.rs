//! The README's curl commands run verbatim against a live daemon (only the binaries' and the
//! kernels' folders and the port are put in), and print the first 8 pixels' counts; docs/protocol.md's WGSL-only
//! block registers and computes.

mod common;

use std::process::Command;

use common::*;

#[test]
fn readme_curl_commands_work() {
    let readme = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
        .expect("README");
    let section = readme
        .split("<!-- readme-curl:begin -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- readme-curl:end -->").next())
        .expect("the marked curl section");
    let script = section.trim().trim_start_matches("```sh").trim_end_matches("```");
    let bins = std::path::Path::new(env!("CARGO_BIN_EXE_xcd")).parent().expect("the binaries' folder").to_owned();
    assert!(
        bins.join("xcrun").exists(),
        "xcrun is not built beside xcd: run `cargo build --workspace --bins` (scripts/test does)"
    );
    let daemon = xcd().secret(SECRET).start();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = script
        .replace("target/release/", &format!("{}/", bins.display()))
        .replace("kernels/wgsl/", &format!("{}/kernels/wgsl/", root.display()))
        .replace("7227", &daemon.port.to_string());
    let dir = tempfile::tempdir().expect("dir");
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // od's lines: every token a number.
    let counts: Vec<u32> = stdout
        .lines()
        .filter(|l| !l.trim().is_empty() && l.split_whitespace().all(|t| t.parse::<u32>().is_ok()))
        .flat_map(|l| l.split_whitespace().map(|t| t.parse::<u32>().unwrap_or(u32::MAX)).collect::<Vec<_>>())
        .collect();
    let want: Vec<u32> = (8_808_090..8_808_098).map(|i| xcd_kernels::escape_pixel(i, 4096, 4096, 2000)).collect();
    assert_eq!(want, [2000, 2000, 337, 463, 179, 89, 44, 42], "the README quotes these counts");
    assert_eq!(counts, want, "{stdout}");
    assert!(stdout.contains("\"devices\""), "the devices query printed: {stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_protocol_docs_wgsl_only_block_registers_and_computes() {
    let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.md"))
        .expect("docs/protocol.md");
    let json = doc
        .split("## A block from a REST client")
        .nth(1)
        .and_then(|rest| rest.split("```json").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the block's JSON");
    let daemon = xcd().secret(SECRET).start();
    let client = xcd_e2e::client();
    let registered = client
        .post(daemon.url("/v1/blocks"))
        .header("authorization", auth())
        .body(json.to_owned())
        .send()
        .await
        .expect("sent");
    assert_eq!(registered.status(), 201, "{}", registered.text().await.unwrap_or_default());
    let id = registered.json::<serde_json::Value>().await.expect("json")["id"].as_str().expect("an id").to_owned();
    // The id, computed as the doc says a client can.
    let python = doc
        .split("### A block's id")
        .nth(1)
        .and_then(|rest| rest.split("```python").nth(1))
        .and_then(|rest| rest.split("```").next())
        .expect("the id's Python");
    let mut run = Command::new(std::env::var("XCD_PYTHON").unwrap_or_else(|_| "python3".into()))
        .args(["-c", python])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python runs");
    std::io::Write::write_all(&mut run.stdin.take().expect("stdin"), json.as_bytes()).expect("the block to python");
    let computed = run.wait_with_output().expect("python ends");
    assert_eq!(String::from_utf8_lossy(&computed.stdout).trim(), id, "the doc's id is the daemon's");
    // y = 2 * x + y over four items: x = 1, 2, 3, 4 and y = 10 each.
    let body: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 10.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let tile = client
        .post(daemon.url(&format!("/v1/blocks/{id}/tile?start=0&count=4&params=2.0")))
        .header("authorization", auth())
        .body(body)
        .send()
        .await
        .expect("sent");
    assert_eq!(tile.status(), 200);
    let out: Vec<f32> =
        tile.bytes().await.expect("bytes").chunks(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert_eq!(out, [12.0, 14.0, 16.0, 18.0]);
}
