//! What keeps strangers out, against the real daemon: wrong secrets hold an address back (and
//! only that address, and not a program there that already showed the secret), TLS is 1.2 or newer with modern suites only (checked with `openssl
//! s_client`), the secret never reaches a log even at the most verbose level, and a private key
//! that others can read is refused with what to do.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;

/// curl through the daemon, as client `from` (the daemon trusts 127.0.0.1 as a proxy, so
/// `X-Forwarded-For` names the client): (status, body).
fn as_client(url: &str, from: &str, secret: &str) -> (u16, String) {
    let out = xcd_e2e::curl(&[
        "-H",
        &format!("X-Forwarded-For: {from}"),
        "-H",
        &format!("Authorization: Bearer {secret}"),
        "-w",
        "\n%{http_code}",
        url,
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (status.parse().unwrap_or(0), body.to_owned())
}

#[test]
fn wrong_secrets_hold_an_address_back_and_no_other() {
    let daemon = xcd().secret(SECRET).args(&["-trust-proxy", "127.0.0.1", "-mdns", "false"]).start();
    let devices = daemon.url("/v1/devices");
    let (guesser, neighbour) = ("203.0.113.9", "203.0.113.10");
    // Not a guess: an Authorization that is not a bearer token is refused, and not counted.
    for _ in 0..8 {
        let basic = xcd_e2e::curl(&["-H", &format!("X-Forwarded-For: {guesser}"), "-u", "x:guess", &devices]);
        let body = String::from_utf8_lossy(&basic.stdout).into_owned();
        assert!(body.contains("secret_refused") && body.contains("Authorization: Bearer"), "{body}");
    }
    for i in 0..5 {
        let (status, body) = as_client(&devices, guesser, &format!("guess-{i}"));
        assert_eq!(status, 401, "guess {i}: {body}");
    }
    // Held back now, from the fifth: even the right secret from that address is refused, and
    // says until when.
    let (status, body) = as_client(&devices, guesser, SECRET);
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("too_many_failures") && body.contains("try again then"), "{body}");
    let head = xcd_e2e::curl(&[
        "-D",
        "-",
        "-o",
        "/dev/null",
        "-H",
        &format!("X-Forwarded-For: {guesser}"),
        "-H",
        &format!("Authorization: Bearer {SECRET}"),
        &devices,
    ]);
    assert!(String::from_utf8_lossy(&head.stdout).to_lowercase().contains("retry-after: 1"), "{head:?}");
    // The page's form counts the same way.
    let form = xcd_e2e::curl(&[
        "-H",
        &format!("X-Forwarded-For: {guesser}"),
        "--data-urlencode",
        &format!("secret={SECRET}"),
        "-w",
        "%{http_code}",
        &daemon.url("/"),
    ]);
    let form = String::from_utf8_lossy(&form.stdout).into_owned();
    assert!(form.ends_with("429") && form.contains("Too many wrong secrets"), "{form}");
    // Another address is not held back.
    let (status, _) = as_client(&devices, neighbour, SECRET);
    assert_eq!(status, 200);
    // After the hold, the right secret works and clears the count.
    std::thread::sleep(Duration::from_millis(1200));
    let (status, body) = as_client(&devices, guesser, SECRET);
    assert_eq!(status, 200, "{body}");
    let (_, page) = as_client(&daemon.url("/"), neighbour, SECRET);
    assert!(page.contains("too_many_failures") && page.contains(guesser), "kept among the refusals: {page}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_guesser_at_a_programs_address_does_not_stop_it() {
    // No trusted proxy: the program and the guesser are both 127.0.0.1, as behind one NAT.
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    let devices = daemon.url("/v1/devices");
    let program = xcd_e2e::client();
    let ask = |secret: &'static str| program.get(&devices).bearer_auth(secret).send();
    assert_eq!(ask(SECRET).await.expect("sent").status(), 200, "the program shows the secret");
    for i in 0..10 {
        let guess =
            xcd_e2e::curl(&["-H", &format!("Authorization: Bearer guess-{i}"), "-w", "\n%{http_code}", &devices]);
        let text = String::from_utf8_lossy(&guess.stdout).into_owned();
        assert!(text.ends_with("401") || text.ends_with("429"), "guess {i}: {text}");
    }
    // The address is held back for new connections, right secret or not...
    let (status, body) = {
        let out = xcd_e2e::curl(&["-H", &format!("Authorization: Bearer {SECRET}"), "-w", "\n%{http_code}", &devices]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, status) = text.rsplit_once('\n').map(|(b, s)| (b.to_owned(), s.to_owned())).unwrap_or_default();
        (status, body)
    };
    assert_eq!(status, "429", "{body}");
    // ...but the program, on the connection where it showed the secret, is served throughout,
    // and a wrong secret there is still refused (and counted).
    for _ in 0..30 {
        assert_eq!(ask(SECRET).await.expect("sent").status(), 200, "the program is not stopped");
    }
    assert_eq!(ask("a-wrong-one").await.expect("sent").status(), 401);
    assert_eq!(ask(SECRET).await.expect("sent").status(), 200);
}

fn s_client(port: u16, args: &[&str]) -> (bool, String) {
    let out = Command::new("openssl")
        .args(["s_client", "-connect", &format!("127.0.0.1:{port}"), "-servername", "localhost"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl runs (Debian package openssl)");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // "New, TLSv1.2, Cipher is ECDHE-ECDSA-AES256-GCM-SHA384" once a handshake completed.
    let agreed = text.contains(", Cipher is ") && !text.contains("Cipher is (NONE)");
    (agreed, text)
}

#[test]
fn tls_is_1_2_or_newer_with_modern_suites_only() {
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    // The client is allowed everything it has (SECLEVEL=0), so a refusal is the daemon's.
    for old in ["-tls1", "-tls1_1"] {
        let (agreed, text) = s_client(daemon.port, &[old, "-cipher", "DEFAULT@SECLEVEL=0"]);
        assert!(!agreed && text.contains("alert handshake failure"), "{old}: not refused by the daemon:\n{text}");
    }
    for weak in ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-SHA", "DHE-RSA-AES128-GCM-SHA256"] {
        let (agreed, text) = s_client(daemon.port, &["-tls1_2", "-cipher", &format!("{weak}@SECLEVEL=0")]);
        assert!(!agreed && text.contains("alert handshake failure"), "TLS 1.2 with {weak}:\n{text}");
    }
    let (agreed, text) = s_client(daemon.port, &["-tls1_2"]);
    assert!(agreed && text.contains("TLSv1.2"), "{text}");
    let modern = ["ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"];
    assert!(modern.iter().any(|c| text.contains(c)), "a forward-secret AEAD suite: {text}");
    let (agreed, text) = s_client(daemon.port, &["-tls1_3"]);
    assert!(agreed && text.contains("TLSv1.3"), "{text}");
}

#[test]
fn the_secret_never_reaches_a_log() {
    let daemon = xcd().secret(SECRET).env("RUST_LOG", "trace").args(&["-mdns", "false"]).start();
    let guess = "wrong-horse-battery";
    for secret in [SECRET, guess] {
        let _ = xcd_e2e::curl(&["-H", &format!("Authorization: Bearer {secret}"), &daemon.url("/v1/devices")]);
        let _ = xcd_e2e::curl(&["--data-urlencode", &format!("secret={secret}"), &daemon.url("/")]);
    }
    // A program's side, as verbose as it gets: xcrun check walks a program's first contact.
    let home = tempfile::tempdir().expect("XCC_HOME");
    let xcrun = std::path::PathBuf::from(env!("CARGO_BIN_EXE_xcd")).with_file_name("xcrun");
    let out = Command::new(xcrun)
        .args(["check", &format!("127.0.0.1:{}", daemon.port)])
        .env("XC_PAR_SECRET", SECRET)
        .env("XCC_HOME", home.path())
        .env("RUST_LOG", "trace")
        .output()
        .expect("xcrun runs");
    let program = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{program}");
    std::thread::sleep(Duration::from_millis(300));
    let log = format!("{}\n{}", daemon.stdout.join("\n"), daemon.stderr());
    assert!(log.lines().count() > 5, "the daemon logged at trace level: {log}");
    for text in [&log, &program] {
        for secret in [SECRET, guess, "correct-horse", "Bearer "] {
            assert!(!text.contains(secret), "{secret:?} in a log:\n{text}");
        }
    }
}

#[test]
fn a_private_key_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().expect("XCD_HOME");
    drop(xcd().home(home.path()).args(&["-mdns", "false"]).start());
    let key = home.path().join("key.pem");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = Command::new(env!("CARGO_BIN_EXE_xcd"))
        .args(["-port", "0", "-listen", "127.0.0.1", "-mdns", "false"])
        .env("XCD_HOME", home.path())
        .output()
        .expect("xcd runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("can be read by others (mode 644)") && stderr.contains("chmod 600"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "it served nothing");
}
