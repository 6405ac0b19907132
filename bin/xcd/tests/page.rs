//! The daemon's own page at `GET /`: shown to anyone when the daemon has no secret; with one,
//! only the form until the secret is given (then a cookie: HttpOnly, Secure) or sent as a bearer.
//! Checked with curl over real TLS and in headless Chromium.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::*;

fn curl(args: &[&str]) -> (String, String) {
    let out = xcd_e2e::curl(&[&["-D", "-", "-o", "-"], args].concat());
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_lowercase(), body.to_owned())
}

#[test]
fn without_the_secret_nothing_about_the_daemon_is_shown() {
    let daemon = xcd().secret(SECRET).args(&["-pool", "render"]).start();
    let page = daemon.url("/");
    let (head, body) = curl(&[&page]);
    assert!(head.starts_with("http/2 401"), "{head}");
    assert!(body.contains("<form method=\"post\"") && body.contains("type=\"password\""), "{body}");
    for secret_fact in ["llvmpipe", "render", "0.1.0", "Recent"] {
        assert!(!body.contains(secret_fact), "{secret_fact:?} shown without the secret: {body}");
    }
    assert!(head.contains("content-security-policy: default-src 'none'"), "{head}");

    let (head, body) = curl(&["--data", "secret=wrong", &page]);
    assert!(head.starts_with("http/2 401") && !head.contains("set-cookie"), "{head}");
    assert!(body.contains("not this daemon") && !body.contains("llvmpipe"), "{body}");

    let (head, body) = curl(&["-H", &format!("Authorization: {}", auth()), &page]);
    assert!(head.starts_with("http/2 200"), "{head}");
    for fact in ["llvmpipe", "render", "accepting", "NIMBY hours", "Recent work", "secret_refused", "POST /"] {
        assert!(body.contains(fact), "{fact:?} on the page: {body}");
    }

    // The form with the right secret: a cookie that brings the page back, as a browser would.
    let jar = tempfile::NamedTempFile::new().expect("a cookie jar");
    let jar = jar.path().to_string_lossy().into_owned();
    let (head, _) = curl(&["-c", &jar, "--data-urlencode", &format!("secret={SECRET}"), &page]);
    assert!(head.starts_with("http/2 303") && head.contains("location: ."), "{head}");
    let cookie = head.lines().find(|l| l.starts_with("set-cookie: xcd_page=")).expect("the cookie");
    for flag in ["httponly", "secure", "samesite=strict", "path=/", "max-age=2592000"] {
        assert!(cookie.contains(flag), "{flag} in {cookie}");
    }
    assert!(!cookie.contains(&SECRET.to_lowercase()), "the cookie is not the secret: {cookie}");
    let (head, body) = curl(&["-b", &jar, &page]);
    assert!(head.starts_with("http/2 200") && body.contains("llvmpipe"), "{head}{body}");
    // A forged or altered cookie is not.
    let value = cookie.trim_start_matches("set-cookie: xcd_page=").split(';').next().unwrap_or_default();
    let (issued, tag) = value.split_once('.').expect("issued.tag");
    let forged = format!("xcd_page={}.{tag}", issued.parse::<u64>().expect("a time") + 1);
    let (head, _) = curl(&["-b", &forged, &page]);
    assert!(head.starts_with("http/2 401"), "{head}");
    assert!(!daemon.stderr().contains(SECRET), "the secret reached the log");
}

#[test]
fn a_daemon_without_a_secret_shows_its_page_and_its_work() {
    let daemon = xcd().args(&["-nimby", "00:00-00:01"]).start();
    let (head, body) = curl(&[&daemon.url("/")]);
    assert!(head.starts_with("http/2 200"), "{head}");
    assert!(body.contains("00:00-00:01") && body.contains("No work yet"), "{body}");
    // One tile with curl shows up as recent work; a bad request as a refusal.
    let block = xcd_kernels::all().into_iter().find(|b| b.desc.name == "escape").expect("escape");
    tokio::runtime::Runtime::new().expect("a runtime").block_on(async {
        let response =
            xcd_e2e::client().post(daemon.url("/v1/blocks")).json(&*block.desc).send().await.expect("registers");
        assert!(response.status().is_success(), "{}", response.text().await.unwrap_or_default());
    });
    let tile = daemon.url(&format!("/v1/blocks/{}/tile?count=16&params=4,4,10", block.desc.id()));
    let out = xcd_e2e::curl(&["-f", "-X", "POST", "-o", "/dev/null", &tile]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let unknown = "00".repeat(32);
    let _ = xcd_e2e::curl(&["-X", "POST", &daemon.url(&format!("/v1/blocks/{unknown}/tile?count=1"))]);
    let (_, body) = curl(&[&daemon.url("/")]);
    assert!(body.contains("<td>escape</td>") && body.contains("<td>16</td>"), "{body}");
    assert!(body.contains("unknown_block") && body.contains(&format!("POST /v1/blocks/{unknown}/tile")), "{body}");
}

#[test]
fn chromium_gives_the_secret_once_and_is_remembered() {
    let Some(browser) = xcd_e2e::browser::Browser::start_or_skip() else { return };
    let daemon = xcd().secret(SECRET).args(&["-pool", "render"]).start();
    browser.open(&daemon.url("/"));
    assert!(browser.html().contains("type=\"password\""), "the form first");
    browser.submit("secret", "wrong");
    browser.wait_for_text("body", "not this daemon", Duration::from_secs(10));
    browser.submit("secret", SECRET);
    browser.wait_for_text("h1", "xcd on", Duration::from_secs(10));
    let devices = browser.text(".devices").unwrap_or_default();
    assert!(devices.contains("llvmpipe"), "{devices}");
    let cookies = browser.cookies();
    assert!(cookies.contains(&("xcd_page".to_owned(), true, true)), "HttpOnly and Secure: {cookies:?}");
    // Remembered: the page again, with no form, and the script in the page cannot read the cookie.
    browser.open(&daemon.url("/"));
    browser.wait_for_text(".refusals", "secret_refused", Duration::from_secs(10));
    assert_eq!(browser.eval("return document.cookie;"), serde_json::json!(""));
    let shot = browser.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xcd/page.png"));
    assert!(std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 10_000, "a real screenshot");
    // At a phone's width the page fits, its tables as cards of cells.
    browser.resize(390, 844);
    let widths = browser.eval("return [document.documentElement.clientWidth, document.documentElement.scrollWidth];");
    let [view, page] = [0, 1].map(|i| widths[i].as_f64().unwrap_or(f64::NAN));
    browser.screenshot(&PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("xcd/page-phone.png"));
    assert!(page <= view, "at 390 px the page is {page} px wide, wider than its {view} px");
}
