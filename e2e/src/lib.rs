//! The harness for tests that look at the whole repository or start its programs as real
//! processes: finding the repository and its files, running a daemon ([`Daemon`]) as a real
//! process, a real headless browser ([`browser::Browser`]), a delaying, stalling TCP relay
//! ([`relay::Relay`]), and the stand-in CUDA driver library ([`FakeCuda`]). It must not depend on the crates under test, so it sees them only as a user
//! (or a reviewer) would: through their binaries, HTTP and files.
#![forbid(unsafe_code)]

pub mod browser;
pub mod daemon;
#[cfg(target_os = "linux")]
pub mod fakecuda;
pub mod netns;
pub mod relay;

pub use daemon::{Daemon, DaemonBuilder, client, curl, nimby_range_holding_now};
#[cfg(target_os = "linux")]
pub use fakecuda::FakeCuda;
pub use netns::NetPair;

use std::path::{Path, PathBuf};

/// The `q` quantile (0 to 1) of values sorted ascending; NaN for none.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

/// CPU seconds (user and system, every thread) process `pid` has used so far, from
/// `/proc/PID/stat` in its 10 ms ticks (Linux's USER_HZ is 100); 0 where that cannot be read.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The command name, in parentheses, may hold spaces: the fields counted start after it.
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are the 14th and 15th fields; the 3rd (state) is the first after the name.
    (ticks(11) + ticks(12)) as f64 / 100.0
}

/// A TCP port free on loopback now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The repository's root (the workspace folder).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// Every file under `dir` (relative to the root) whose name ends with `suffix`, skipping
/// `target/` and hidden folders, in a stable order.
pub fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![repo_root().join(dir)];
    while let Some(folder) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if name.ends_with(suffix) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// A path relative to the repository root, for messages.
pub fn relative(path: &Path) -> String {
    path.strip_prefix(repo_root()).unwrap_or(path).display().to_string()
}
