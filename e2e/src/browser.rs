//! A real browser for tests: Debian's `chromium`, headless, driven over WebDriver by
//! `chromedriver` (package `chromium-driver`) with the fantoccini crate, behind a blocking API.
//!
//! Chromium runs with the flags this machine needs (no sandbox as root, no GPU, nothing fetched
//! from outside: no background networking, component updates or sync) and a fresh profile that
//! is deleted afterwards. Certificates are accepted as WebDriver's `acceptInsecureCerts` says,
//! for a daemon's self-signed one; nothing else about the page is relaxed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};

/// Where Debian puts the browser and its driver.
const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The flags Chromium runs with.
pub const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--window-size=1200,900",
];

/// A headless Chromium session.
pub struct Browser {
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

/// True when Chromium and chromedriver are installed (`scripts/deps --tests` installs them).
pub fn available() -> bool {
    Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists()
}

impl Browser {
    /// [`Browser::start`], or None where Chromium is not installed (the test then says it
    /// skipped); under CI, which installs it, a missing browser fails the test.
    pub fn start_or_skip() -> Option<Browser> {
        if available() {
            return Some(Browser::start());
        }
        assert!(std::env::var_os("CI").is_none(), "CI installs chromium and chromium-driver (scripts/deps --tests)");
        eprintln!("skipped: /usr/bin/chromium or /usr/bin/chromedriver missing (scripts/deps --tests installs them)");
        None
    }

    /// Starts chromedriver and a Chromium session with a fresh profile.
    pub fn start() -> Browser {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
        let profile = tempfile::tempdir().expect("a profile folder");
        let port = crate::free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts (Debian package chromium-driver; scripts/deps --tests installs it)");
        let mut args: Vec<String> = FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        let capabilities = serde_json::json!({
            "browserName": "chrome",
            "acceptInsecureCerts": true,
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let serde_json::Value::Object(capabilities) = capabilities else { unreachable!("an object") };
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = runtime.block_on(async {
            loop {
                let connector = hyper_util::client::legacy::connect::HttpConnector::new();
                match ClientBuilder::new(connector).capabilities(capabilities.clone()).connect(&url).await {
                    Ok(client) => break client,
                    Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(200)).await,
                    Err(e) => panic!("no Chromium session through chromedriver in 30 s: {e}"),
                }
            }
        });
        Browser { runtime, client: Some(client), driver, _profile: profile }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("a session until dropped")
    }

    /// Opens `url` and waits for it to load.
    pub fn open(&self, url: &str) {
        self.runtime.block_on(self.client().goto(url)).unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// The text of the first element matching `css`, or None when there is none.
    pub fn text(&self, css: &str) -> Option<String> {
        self.runtime.block_on(async {
            let element = self.client().find(Locator::Css(css)).await.ok()?;
            element.text().await.ok()
        })
    }

    /// Runs `script` (a function body: `return …;`) in the page; its value.
    pub fn eval(&self, script: &str) -> serde_json::Value {
        self.runtime.block_on(self.client().execute(script, Vec::new())).unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// The page's HTML as the browser holds it now (after scripts changed it).
    pub fn html(&self) -> String {
        self.runtime.block_on(self.client().source()).expect("the page's source")
    }

    /// Waits up to `within` for the text of `css` to contain `want`; returns that text.
    pub fn wait_for_text(&self, css: &str, want: &str, within: Duration) -> String {
        self.wait_for(css, &format!("{want:?}"), within, |text| text.contains(want))
    }

    /// Waits up to `within` for the text of `css` to pass `check` (`what` says what it checks,
    /// for the failure); returns that text.
    pub fn wait_for(&self, css: &str, what: &str, within: Duration, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + within;
        loop {
            let text = self.text(css).unwrap_or_default();
            if check(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{what} in {css} within {within:?}; it says: {text}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Types `value` into the field named `field` of the first form and submits it; waits for
    /// the page that answers.
    pub fn submit(&self, field: &str, value: &str) {
        self.runtime.block_on(async {
            let form = self.client().form(Locator::Css("form")).await.expect("a form on the page");
            form.set_by_name(field, value).await.expect("the field");
            form.submit().await.expect("the form submits");
        });
    }

    /// The cookies the browser holds for the page open now: (name, HttpOnly, Secure).
    pub fn cookies(&self) -> Vec<(String, bool, bool)> {
        let cookies = self.runtime.block_on(self.client().get_all_cookies()).expect("the cookies");
        cookies
            .iter()
            .map(|c| (c.name().to_owned(), c.http_only().unwrap_or(false), c.secure().unwrap_or(false)))
            .collect()
    }

    /// Sets the window's size in CSS pixels, e.g. 390 × 844 for a phone held upright.
    pub fn resize(&self, width: u32, height: u32) {
        self.runtime.block_on(self.client().set_window_size(width, height)).expect("the window resized");
    }

    /// Saves a screenshot of the window as PNG at `path` (folders made as needed); returns it.
    pub fn screenshot(&self, path: &Path) -> PathBuf {
        let png = self.runtime.block_on(self.client().screenshot()).expect("a screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("the screenshot's folder");
        }
        std::fs::write(path, png).expect("the screenshot written");
        eprintln!("screenshot: {}", path.display());
        path.to_path_buf()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
