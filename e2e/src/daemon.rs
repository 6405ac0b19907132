//! A real `xcd` process for tests: started with its own `XCD_HOME`, ready once it prints its
//! serving line, stopped by signal (or killed when dropped).

use parking_lot::Mutex;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::Duration;

/// How long a daemon may take to print its serving line.
const READY: Duration = Duration::from_secs(60);

/// Builds a daemon: `Daemon::build(bin).secret("s").nimby("…").start()`.
#[derive(Debug, Clone)]
pub struct DaemonBuilder {
    bin: PathBuf,
    secret: Option<String>,
    home: Option<PathBuf>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    /// Commands the daemon runs under (`taskset -c 1`, `ip netns exec ns`), outermost first.
    wrap: Vec<String>,
    listen: String,
    netns: Option<String>,
    /// The port to listen on (0: a free one).
    port: u16,
    /// Start with an empty environment but for what the builder sets, PATH=/usr/bin:/bin and
    /// HOME=XCD_HOME, as on a machine that has nothing of this repository's.
    clean: bool,
}

/// A running daemon.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    /// The port it listens on (from its serving line).
    pub port: u16,
    /// Its stdout lines up to and including the serving line and the lines right after it.
    pub stdout: Vec<String>,
    stderr: Arc<Mutex<String>>,
    /// Its `XCD_HOME` (kept alive while the daemon runs, unless given by the test).
    pub home: PathBuf,
    _temp: Option<tempfile::TempDir>,
    /// True when started with `-plain`.
    pub plain: bool,
    /// The address it listens on.
    listen: String,
    /// The network namespace it runs in, if any: requests to it are made from there.
    netns: Option<String>,
}

impl Daemon {
    /// A builder for the `xcd` that cargo built beside `program` (a test's
    /// `env!("CARGO_BIN_EXE_…")`); says how to build it where it is missing.
    pub fn beside(program: &str) -> DaemonBuilder {
        let bin = Path::new(program).with_file_name("xcd");
        let name = Path::new(program).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        assert!(
            bin.exists(),
            "xcd is not built beside {name}: run `cargo build --workspace --bins` (scripts/test does)"
        );
        Daemon::build(bin)
    }

    /// A builder for the daemon binary at `bin`, listening on 127.0.0.1 on a free port.
    pub fn build(bin: impl AsRef<Path>) -> DaemonBuilder {
        DaemonBuilder {
            bin: bin.as_ref().to_owned(),
            secret: None,
            home: None,
            args: Vec::new(),
            env: Vec::new(),
            clean: false,
            port: 0,
            wrap: Vec::new(),
            listen: "127.0.0.1".to_owned(),
            netns: None,
        }
    }
}

impl DaemonBuilder {
    /// Sets `XC_PAR_SECRET`.
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(secret.to_owned());
        self
    }

    /// Uses this `XCD_HOME` (default: a fresh temporary folder).
    pub fn home(mut self, home: &Path) -> Self {
        self.home = Some(home.to_owned());
        self
    }

    /// Adds command-line arguments.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Listens on this port instead of a free one (as several machines' daemons would, each at
    /// its own address).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Starts it with nothing from this process's environment (PATH=/usr/bin:/bin, HOME=its
    /// XCD_HOME, and what `env` and `secret` set).
    pub fn clean_env(mut self) -> Self {
        self.clean = true;
        self
    }

    /// Sets an environment variable.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Runs the daemon under `command` (e.g. `prlimit --nofile=256:8192`), inside any wrapper
    /// given before.
    pub fn under(mut self, command: &[&str]) -> Self {
        self.wrap.extend(command.iter().map(|a| (*a).to_owned()));
        self
    }

    /// Runs the daemon on these CPUs only (`taskset -c LIST`, util-linux).
    pub fn cpus(mut self, list: &str) -> Self {
        self.wrap.extend(["taskset", "-c", list].map(str::to_owned));
        self
    }

    /// Runs the daemon in a network namespace (`ip netns exec NAME`), listening on `addr` there.
    pub fn netns(mut self, name: &str, addr: &str) -> Self {
        self.wrap.extend(["ip", "netns", "exec", name].map(str::to_owned));
        self.listen = addr.to_owned();
        self.netns = Some(name.to_owned());
        self
    }

    /// The command that starts the daemon with its home at `home`.
    fn command(&self, home: &Path) -> Command {
        let mut command = match self.wrap.split_first() {
            Some((first, rest)) => {
                let mut wrapped = Command::new(first);
                wrapped.args(rest).arg(&self.bin);
                wrapped
            }
            None => Command::new(&self.bin),
        };
        if self.clean {
            command.env_clear().env("PATH", "/usr/bin:/bin").env("HOME", home);
        }
        command
            .args(["-port", &self.port.to_string(), "-listen", &self.listen])
            .args(&self.args)
            .env("XCD_HOME", home)
            .env_remove("XC_PAR_SECRET")
            .env("XDG_RUNTIME_DIR", std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(secret) = &self.secret {
            command.env("XC_PAR_SECRET", secret);
        }
        for (k, v) in &self.env {
            command.env(k, v);
        }
        command
    }

    /// Starts the daemon and waits for its serving line.
    pub fn start(self) -> Daemon {
        let temp = match &self.home {
            Some(_) => None,
            None => Some(tempfile::tempdir().expect("a temporary XCD_HOME")),
        };
        let home = self.home.clone().unwrap_or_else(|| temp.as_ref().map(|t| t.path().to_owned()).unwrap_or_default());
        let mut child =
            self.command(&home).spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", self.bin.display()));
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            keep_reading(err, stderr.clone());
        }
        let (tx, rx) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut stdout = Vec::new();
        let port = loop {
            match rx.recv_timeout(READY) {
                Ok(line) => {
                    let port = line.strip_prefix("xcd: serving ").and_then(|rest| {
                        let after = rest.rsplit_once(" on port ")?.1;
                        after.split(',').next()?.trim().parse::<u16>().ok()
                    });
                    stdout.push(line);
                    if let Some(port) = port {
                        break port;
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let err = stderr.lock().clone();
                    panic!("xcd printed no serving line: stdout {stdout:?}, stderr {err}");
                }
            }
        };
        // The lines printed right after the serving line (the CPU-device line).
        while let Ok(line) = rx.recv_timeout(Duration::from_millis(300)) {
            stdout.push(line);
        }
        let plain = self.args.iter().any(|a| a == "-plain" || a == "--plain");
        Daemon { child, port, stdout, stderr, home, _temp: temp, plain, listen: self.listen, netns: self.netns }
    }
}

impl Daemon {
    /// The URL of `path` on this daemon.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.plain { "http" } else { "https" };
        format!("{scheme}://{}:{}{path}", self.listen, self.port)
    }

    /// Everything the daemon wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().clone()
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its resident memory now, in KiB (from `/proc`; 0 where that cannot be read).
    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    /// The most resident memory it has had since it started, in KiB (`VmHWM`; 0 likewise).
    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    fn status_kib(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    /// How many files (sockets among them) it has open now.
    pub fn open_files(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid())).map(|d| d.count()).unwrap_or(0)
    }

    /// Waits (up to a minute) until the daemon has served at least `tiles` tiles, by its metrics.
    pub fn wait_for_tiles(&self, secret: &str, tiles: f64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let served = self.metric(secret, "xcd_tiles_total");
            if served >= tiles {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "the daemon served {served} tiles in a minute");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The sum of the daemon's metric series named `name` (every label), read with curl; 0 when
    /// it has none.
    pub fn metric(&self, secret: &str, name: &str) -> f64 {
        let metrics = self.url("/metrics");
        let auth = format!("Authorization: Bearer {secret}");
        let out = match &self.netns {
            Some(ns) => Command::new("ip")
                .args(["netns", "exec", ns, "curl", "-sS", "-k", "-H", &auth, &metrics])
                .output()
                .expect("curl runs in the daemon's namespace"),
            None => curl(&["-H", &auth, &metrics]),
        };
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.split([' ', '{']).next() == Some(name))
            .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
            .sum()
    }

    /// Sends `signal` to the daemon.
    #[cfg(unix)]
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).expect("signal delivered");
    }

    /// Sends SIGTERM and waits (up to `within`) for the daemon to exit.
    #[cfg(unix)]
    pub fn terminate(mut self, within: Duration) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM delivered");
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(std::time::Instant::now() < deadline, "xcd did not exit within {within:?} of SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // A stopped daemon (SIGSTOP in a test) dies of SIGKILL all the same.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs curl (insecure, since the daemon's certificate is self-signed and pinning is the
/// program's business) and returns (status line code, body, http version).
pub fn curl(args: &[&str]) -> std::process::Output {
    Command::new("curl").arg("-sS").arg("-k").args(args).output().expect("curl runs (install curl)")
}

/// An HTTP/2 client for tests: TLS without verification, since the daemon's certificate is
/// self-signed (programs pin it; that is issue 4's business).
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().danger_accept_invalid_certs(true).build().expect("a client")
}

/// A `-nimby` range that holds now, in this machine's local time (from `date`, as the daemon on
/// this machine sees it): from five minutes ago to ten minutes ahead.
pub fn nimby_range_holding_now() -> String {
    let out = Command::new("date").arg("+%H:%M").output().expect("date runs");
    let now = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let (h, m) = now.split_once(':').expect("HH:MM");
    let minutes = h.parse::<u32>().expect("an hour") * 60 + m.parse::<u32>().expect("a minute");
    let fmt = |t: u32| format!("{:02}:{:02}", (t / 60) % 24, t % 60);
    format!("{}-{}", fmt(minutes + 24 * 60 - 5), fmt(minutes + 10))
}

/// Appends everything `from` gives to `sink`, on a thread of its own, until it ends.
fn keep_reading(mut from: impl Read + Send + 'static, sink: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
}
