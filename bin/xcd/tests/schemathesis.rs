//! schemathesis (from PyPI) against a live daemon and `openapi/openapi.yaml`: every check, no
//! failures. Finds it through `XCD_SCHEMATHESIS` or on PATH; `scripts/test` installs it. Where it
//! is absent the test says it skipped, except under CI, which must run it.

mod common;

use std::process::Command;

use common::*;

fn schemathesis() -> Option<String> {
    let candidate = std::env::var("XCD_SCHEMATHESIS").unwrap_or_else(|_| "schemathesis".to_owned());
    Command::new(&candidate).arg("--version").output().ok().filter(|o| o.status.success()).map(|_| candidate)
}

#[tokio::test(flavor = "multi_thread")]
async fn schemathesis_finds_no_failure() {
    let Some(st) = schemathesis() else {
        assert!(std::env::var_os("CI").is_none(), "CI installs schemathesis (scripts/deps); it must run there");
        eprintln!("skipped: schemathesis not found (set XCD_SCHEMATHESIS or run scripts/test)");
        return;
    };
    // Schemathesis sends the page's form hundreds of wrong secrets: holding its address back
    // would leave it nothing but 429s to check everywhere else.
    let daemon = xcd().secret(SECRET).args(&["-secret-failures", "1000000"]).start();
    // Real ids, so the fuzzer reaches past 404s: a registered block and a held array.
    let id = register(&daemon, "poly").await;
    let coef: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let hash: String = xcd_wire::content_hash(&coef).iter().map(|b| format!("{b:02x}")).collect();
    let put = xcd_e2e::client()
        .put(daemon.url(&format!("/v1/arrays/{hash}")))
        .header("authorization", auth())
        .body(coef)
        .send()
        .await
        .expect("array uploaded");
    assert!(put.status().is_success());

    let dir = tempfile::tempdir().expect("dir");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let settings = std::fs::read_to_string(root.join("openapi/schemathesis.toml")).expect("settings");
    let config = dir.path().join("schemathesis.toml");
    std::fs::write(&config, format!("{settings}\n[parameters]\n\"path.id\" = \"{id}\"\n\"path.hash\" = \"{hash}\"\n"))
        .expect("config written");
    let run = || {
        let out = Command::new(&st)
            .arg("--config-file")
            .arg(&config)
            .arg("run")
            .arg(root.join("openapi/openapi.yaml"))
            .args(["--url", &daemon.url(""), "-H", &format!("Authorization: {}", auth()), "--tls-verify", "false"])
            .args(["--checks", "all", "--max-examples", "40", "--workers", "2", "--seed", "7"])
            .arg("--report-dir")
            .arg(dir.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("schemathesis runs");
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let (mut ok, mut text) = run();
    // Schemathesis 4 sometimes trips over its own generator (Hypothesis reports "Inconsistent
    // results" from inside it); that says nothing about the daemon, so it gets one more run.
    // Any failure of a check, or any other error, fails at once.
    if !ok && !text.contains("= FAILURES =") && text.contains("Inconsistent results") {
        eprintln!("schemathesis tripped over its own generator; running it again:\n{text}");
        (ok, text) = run();
    }
    assert!(ok, "schemathesis found failures:\n{text}");
    assert!(text.contains("passed"), "{text}");
    let health = xcd_e2e::client().get(daemon.url("/healthz")).send().await.expect("still serving");
    assert_eq!(health.status(), 200);
}
