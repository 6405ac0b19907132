//! The daemon behind a TLS-terminating reverse proxy, as `docker/compose.yaml` arranges it, with
//! real processes on loopback: Debian's `caddy` runs the repository's own `docker/Caddyfile` in
//! front of two `xcd -plain` nodes (h2c behind it). Through it: the REST endpoints, a curl single
//! tile, the daemon's page, and escape on both nodes with the same total, pinning the proxy's
//! certificate. The nodes believe `X-Forwarded-For` from the proxy only.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use xcd_e2e::{Daemon, DaemonBuilder, free_port};

const SECRET: &str = "correct-horse-battery";
const SIZE: [&str; 6] = ["--width", "512", "--height", "512", "--max-iter", "300"];

fn xcd() -> DaemonBuilder {
    Daemon::beside(env!("CARGO_BIN_EXE_escape"))
}

/// Caddy with `docker/Caddyfile`, TLS on two loopback ports, h2c to two nodes.
struct Proxy {
    child: Child,
    ports: [u16; 2],
    cert: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn proxy(nodes: [&Daemon; 2]) -> Option<Proxy> {
    if !Path::new("/usr/bin/caddy").exists() {
        assert!(std::env::var_os("CI").is_none(), "CI installs caddy (scripts/deps --tests)");
        eprintln!("skipped: /usr/bin/caddy missing (scripts/deps --tests installs it)");
        return None;
    }
    let dir = tempfile::tempdir().expect("the proxy's folder");
    let (cert, key) = (dir.path().join("proxy.crt"), dir.path().join("proxy.key"));
    let made = Command::new(xcd_e2e::repo_root().join("docker/make-cert"))
        .args(["localhost", "127.0.0.1"])
        .env("XCD_CERT_DIR", dir.path())
        .output()
        .expect("docker/make-cert runs");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let ports = [free_port(), free_port()];
    let child = Command::new("/usr/bin/caddy")
        .args(["run", "--adapter", "caddyfile", "--config"])
        .arg(xcd_e2e::repo_root().join("docker/Caddyfile"))
        .env("XCD_PROXY_BIND", "127.0.0.1")
        .env("XCD_PROXY_PORT_0", ports[0].to_string())
        .env("XCD_PROXY_PORT_1", ports[1].to_string())
        .env("XCD_PROXY_CERT", &cert)
        .env("XCD_PROXY_KEY", &key)
        .env("XCD_NODE_0", format!("127.0.0.1:{}", nodes[0].port))
        .env("XCD_NODE_1", format!("127.0.0.1:{}", nodes[1].port))
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("caddy starts");
    let deadline = Instant::now() + Duration::from_secs(30);
    while ports.iter().any(|p| TcpStream::connect(("127.0.0.1", *p)).is_err()) {
        assert!(Instant::now() < deadline, "caddy listens within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(Proxy { child, ports, cert, _dir: dir })
}

/// curl with the proxy's certificate as the only one trusted: (HTTP version, status, body).
fn curl(proxy: &Proxy, args: &[&str]) -> (String, u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "--http2", "--cacert"])
        .arg(&proxy.cert)
        .args(["-w", "\n%{http_version} %{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    assert!(out.status.success(), "curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, last) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (version, status) = last.split_once(' ').unwrap_or(("", "0"));
    (version.to_owned(), status.parse().unwrap_or(0), body.to_owned())
}

fn escape(home: &Path, env: &[(&str, &str)]) -> (Option<u64>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_escape"))
        .args(SIZE)
        .env("XCC_HOME", home)
        .env("XC_PAR_REPORT", "1")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .env_remove("XC_PAR_SECRET")
        .env_remove("XC_PAR_REMOTE")
        .env_remove("XC_PAR_WORKERS")
        .envs(env.iter().copied())
        .output()
        .expect("escape runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8_lossy(&out.stdout).lines().last().and_then(|l| l.trim().parse().ok()), stderr)
}

#[test]
fn rest_a_tile_the_page_and_escape_work_through_caddy() {
    let node = || xcd().secret(SECRET).args(&["-plain", "-trust-proxy", "127.0.0.1", "-mdns", "false"]).start();
    let nodes = [node(), node()];
    let Some(proxy) = proxy([&nodes[0], &nodes[1]]) else { return };
    let auth = format!("Authorization: Bearer {SECRET}");
    let at = |i: usize, path: &str| format!("https://localhost:{}{path}", proxy.ports[i]);

    // REST, over HTTP/2 with TLS at the proxy and h2c behind it.
    let (version, status, body) = curl(&proxy, &["-H", &auth, &at(0, "/v1/version")]);
    assert_eq!((version.as_str(), status), ("2", 200), "{body}");
    assert!(body.contains("\"layout\""), "{body}");
    for path in ["/v1/devices", "/v1/capacity", "/healthz", "/metrics"] {
        let (_, status, body) = curl(&proxy, &["-H", &auth, &at(1, path)]);
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (_, status, body) = curl(&proxy, &[&at(0, "/v1/devices")]);
    assert_eq!(status, 401, "the secret is still the node's to check: {body}");

    // One tile with curl: the README's pixels near the set's edge.
    let block = xcd_kernels::all().into_iter().find(|b| b.desc.name == "escape").expect("escape");
    let desc = tempfile::NamedTempFile::new().expect("a file");
    std::fs::write(desc.path(), serde_json::to_vec(&*block.desc).expect("json")).expect("written");
    let (_, status, body) =
        curl(&proxy, &["-H", &auth, "--data-binary", &format!("@{}", desc.path().display()), &at(0, "/v1/blocks")]);
    assert_eq!(status, 201, "registered: {body}");
    let tile = at(0, &format!("/v1/blocks/{}/tile?start=8808090&count=8&params=4096,4096,2000", block.desc.id()));
    let out = Command::new("curl")
        .args(["-sS", "--http2", "--cacert"])
        .arg(&proxy.cert)
        .args(["-H", &auth, "--data-binary", "@/dev/null", &tile])
        .output()
        .expect("curl runs");
    let counts: Vec<u32> = out.stdout.chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    assert_eq!(counts, [2000, 2000, 337, 463, 179, 89, 44, 42], "{}", String::from_utf8_lossy(&out.stderr));

    // The page, and who the node thinks asked: through Caddy, which replaces a client's own
    // X-Forwarded-For, a spoofed address does not get through.
    let (_, status, _) = curl(
        &proxy,
        &["-H", "Authorization: Bearer wrong", "-H", "X-Forwarded-For: 203.0.113.9", &at(0, "/v1/devices")],
    );
    assert_eq!(status, 401);
    let (_, status, page) = curl(&proxy, &["-H", &auth, &at(0, "/")]);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("<td>escape</td>") && page.contains("secret_refused"), "{page}");
    assert!(!page.contains("203.0.113.9"), "a spoofed X-Forwarded-For got through the proxy: {page}");

    // escape on both nodes through the proxy: the same total, and the proxy's certificate pinned.
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (want, _) = escape(home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    let remote = format!("localhost:{},localhost:{}", proxy.ports[0], proxy.ports[1]);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let (total, report) = escape(home.path(), &env);
    assert_eq!(total, want, "{report}");
    for port in proxy.ports {
        assert!(report.contains(&format!("par: remote worker remote:localhost:{port}:")), "{report}");
    }
    let der = Command::new("openssl")
        .args(["x509", "-outform", "der", "-in"])
        .arg(&proxy.cert)
        .output()
        .expect("openssl runs")
        .stdout;
    let fingerprint: String = xcd_wire::content_hash(&der).iter().map(|b| format!("{b:02x}")).collect();
    let settings = std::fs::read_to_string(home.path().join("settings.toml")).expect("settings");
    for port in proxy.ports {
        assert!(settings.contains(&format!("\"tls.pin.localhost:{port}\" = \"{fingerprint}\"")), "{settings}");
    }
    let (again, report) = escape(home.path(), &env);
    assert_eq!(again, want, "the pin holds on the second run: {report}");
}

#[test]
fn only_a_trusted_proxy_names_the_client() {
    let trusting = xcd().secret(SECRET).args(&["-plain", "-trust-proxy", "127.0.0.1", "-mdns", "false"]).start();
    let wary = xcd().secret(SECRET).args(&["-plain", "-mdns", "false"]).start();
    for (node, shown) in [(&trusting, "203.0.113.9 (via 127.0.0.1)"), (&wary, "127.0.0.1")] {
        let devices = node.url("/v1/devices");
        let out = xcd_e2e::curl(&["-H", "X-Forwarded-For: 203.0.113.9", "-H", "Authorization: Bearer wrong", &devices]);
        assert!(out.status.success());
        let out = xcd_e2e::curl(&["-H", &format!("Authorization: Bearer {SECRET}"), &node.url("/")]);
        let page = String::from_utf8_lossy(&out.stdout);
        assert!(page.contains(&format!("<td>{shown}</td>")), "{shown} in {page}");
    }
    let out = Command::new(PathBuf::from(env!("CARGO_BIN_EXE_escape")).with_file_name("xcd"))
        .args(["-trust-proxy", "proxy.example"])
        .output()
        .expect("xcd runs");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an address or a network"));
}
