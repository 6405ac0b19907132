//! Serving, as a user sees it: the serving line, the certificate kept across restarts, HTTP/2,
//! plain h2c for a proxy, and a clean stop on SIGTERM with a tile in flight.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

fn is_serving_line(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("xcd: serving vulkan:") else { return false };
    let Some((_, tail)) = rest.rsplit_once(" on port ") else { return false };
    let Some((port, cert)) = tail.split_once(", certificate ") else { return false };
    port.parse::<u16>().is_ok()
        && cert.ends_with('…')
        && cert.trim_end_matches('…').len() == 8
        && cert.trim_end_matches('…').chars().all(|c| c.is_ascii_hexdigit())
}

#[test]
fn serving_line_cpu_line_and_no_secret_warning() {
    let daemon = xcd().start();
    assert!(is_serving_line(&daemon.stdout[0]), "{:?}", daemon.stdout);
    assert!(daemon.stdout.iter().any(|l| l.contains("is a CPU device")), "{:?}", daemon.stdout);
    std::thread::sleep(Duration::from_millis(200));
    assert!(daemon.stderr().contains("takes any program that has no secret, from any address"), "{}", daemon.stderr());
}

#[test]
fn a_start_without_xdg_runtime_dir_says_no_error() {
    // As under a systemd system service: Mesa would print "error: XDG_RUNTIME_DIR is invalid or
    // not set" for each device it opens; the daemon gives itself a private one first.
    let daemon = xcd().secret(SECRET).env("XDG_RUNTIME_DIR", "").start();
    assert!(is_serving_line(&daemon.stdout[0]), "{:?}", daemon.stdout);
    std::thread::sleep(Duration::from_millis(200));
    let stderr = daemon.stderr();
    assert!(!stderr.contains("XDG_RUNTIME_DIR") && !stderr.contains("error"), "{stderr}");
    let environ = std::fs::read(format!("/proc/{}/environ", daemon.pid())).expect("its environment");
    let dir = environ
        .split(|b| *b == 0)
        .find_map(|kv| kv.strip_prefix(b"XDG_RUNTIME_DIR="))
        .map(|d| std::path::PathBuf::from(String::from_utf8_lossy(d).into_owned()))
        .expect("a runtime directory");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&dir).expect("made").permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{} is private", dir.display());
}

#[test]
fn certificate_is_made_once_private_and_reused() {
    let home = tempfile::tempdir().expect("home");
    let first = xcd().secret(SECRET).home(home.path()).start();
    let line = first.stdout[0].clone();
    assert!(!first.stderr().contains("takes any program"), "a secret is set: {}", first.stderr());
    assert_eq!(first.terminate(Duration::from_secs(30)).code(), Some(0));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(home.path().join("key.pem")).expect("key kept").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the key is private");
    }
    let second = xcd().secret(SECRET).home(home.path()).start();
    let cert = |l: &str| l.rsplit_once("certificate ").map(|(_, c)| c.to_owned());
    assert_eq!(cert(&line), cert(&second.stdout[0]), "the certificate changed across a restart");

    let out = Command::new(env!("CARGO_BIN_EXE_xcd"))
        .arg("-fingerprint")
        .env("XCD_HOME", home.path())
        .output()
        .expect("xcd -fingerprint");
    let whole = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(whole.len(), 64, "{whole}");
    assert!(cert(&line).is_some_and(|c| whole.starts_with(c.trim_end_matches('…'))));
}

#[test]
fn curl_speaks_http2_over_tls() {
    let daemon = xcd().secret(SECRET).start();
    let out = xcd_e2e::curl(&[
        "--http2",
        "-o",
        "/dev/null",
        "-w",
        "%{http_version}",
        "-H",
        &format!("Authorization: {}", auth()),
        &daemon.url("/v1/version"),
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2");
}

#[test]
fn plain_serves_h2c_and_http1_for_a_proxy() {
    let daemon = xcd().secret(SECRET).args(&["-plain"]).start();
    assert!(daemon.stdout[0].contains("without TLS"), "{:?}", daemon.stdout);
    let h = format!("Authorization: {}", auth());
    let out =
        xcd_e2e::curl(&["--http2-prior-knowledge", "-w", "\n%{http_version}", "-H", &h, &daemon.url("/v1/version")]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with("\n2") && text.contains("\"version\""), "{text}");
    let out = xcd_e2e::curl(&["--http1.1", "-w", "\n%{http_version}", "-H", &h, &daemon.url("/v1/version")]);
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("\n1.1"));
}

#[test]
fn bad_flags_say_what_to_write() {
    let out = Command::new(env!("CARGO_BIN_EXE_xcd"))
        .args(["-nimby", "9-5", "-port", "0"])
        .env("XCD_HOME", tempfile::tempdir().expect("home").path())
        .output()
        .expect("xcd runs");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("HH:MM-HH:MM"));
    let out = Command::new(env!("CARGO_BIN_EXE_xcd")).arg("-h").output().expect("xcd -h");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--port", "--pool", "--nimby", "--devices", "--plain", "--fingerprint"] {
        assert!(help.contains(flag), "-h explains {flag}: {help}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_finishes_the_tile_in_flight_then_exits_0() {
    let daemon = xcd().secret(SECRET).args(&["-depth", "1"]).start();
    let id = register(&daemon, "escape").await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(4);
    let body = reqwest::Body::wrap_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (b, rx))
    }));
    let response = xcd_e2e::client()
        .post(daemon.url(&format!("/v1/blocks/{id}/tiles")))
        .header("authorization", auth())
        .body(body)
        .send()
        .await
        .expect("stream opens");
    let mut results = Results::new(response);
    // A tile that keeps llvmpipe busy for a while: 256×256 pixels, up to 20,000 iterations each.
    tx.send(Ok(escape_frame(1, 0, 65_536, 256, 256, 20_000))).await.expect("sent");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = daemon.pid();
    let stopper = std::thread::spawn(move || daemon.terminate(Duration::from_secs(60)));
    let _ = pid;
    match results.next().await {
        Some(xcd_wire::ResultFrame::Done { tag, outputs }) => {
            assert_eq!(tag, 1);
            assert_eq!(outputs, escape_expected(0, 65_536, 256, 256, 20_000), "the tile in flight finished correctly");
        }
        other => panic!("expected the tile's result, got {other:?}"),
    }
    drop(tx);
    let status = tokio::task::spawn_blocking(move || stopper.join().expect("joined")).await.expect("joined");
    assert_eq!(status.code(), Some(0), "xcd exits 0 after SIGTERM");
}
