//! Load on one live daemon, over real TLS and HTTP/2: `h2load` (Debian nghttp2-client) against
//! each REST endpoint, the single-tile compute endpoint among them, then many programs (the
//! escape example, each its own process) streaming tiles to the daemon at once. It records
//! requests per second, latency percentiles, failures and the daemon's peak memory, checks that
//! every program got the right total, and writes a markdown table (`scripts/load` runs it).
//!
//! ```text
//! xcd-load --bin-dir target/dist [--requests 20000] [--programs 32] [--out target/load]
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use xcd_e2e::{Daemon, quantile};
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms, ParamKind, ParamSpec};

const SECRET: &str = "load-test-secret";

/// A cheap kernel for the single-tile endpoint: `y[i] = x[i] * k`.
const SCALE: &str = r#"
struct Tile { start: u32, count: u32, first: u32, k: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn scale(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = x[i] * tile.k;
}
"#;
/// Items in each single tile: 1 KiB in, 1 KiB out.
const TILE_ITEMS: u32 = 256;

struct Options {
    bin_dir: PathBuf,
    requests: u32,
    programs: u32,
    out: PathBuf,
}

fn options() -> Result<Options, String> {
    let mut o = Options { bin_dir: PathBuf::new(), requests: 20_000, programs: 32, out: PathBuf::from("target/load") };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bin-dir" => o.bin_dir = PathBuf::from(value()?),
            "--requests" => o.requests = value()?.parse().map_err(|e| format!("--requests: {e}"))?,
            "--programs" => o.programs = value()?.parse().map_err(|e| format!("--programs: {e}"))?,
            "--out" => o.out = PathBuf::from(value()?),
            other => return Err(format!("unknown flag {other}: see the file's doc for the flags")),
        }
    }
    if o.bin_dir.as_os_str().is_empty() {
        return Err("--bin-dir DIR (where xcd and escape are built) is needed".into());
    }
    Ok(o)
}

/// The daemon's peak resident memory so far (VmHWM), in MiB.
fn peak_mib(daemon: &Daemon) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", daemon.pid())).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

struct Row {
    what: String,
    done: String,
    rate: String,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
    failed: u64,
    peak: f64,
}

/// One h2load run; its row.
/// How many requests h2load keeps in flight: (connections, streams per connection).
type Concurrency = (u32, u32);

fn h2load(
    daemon: &Daemon,
    what: &str,
    (path, body): (&str, Option<&Path>),
    (connections, streams): Concurrency,
    requests: u32,
    out: &Path,
) -> Result<Row, String> {
    let log = out.join(format!("h2load-{}.tsv", what.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    // h2load appends to its log: start each run from an empty one.
    let _ = std::fs::remove_file(&log);
    let mut command = Command::new("h2load");
    command
        .args(["-n", &requests.to_string(), "-c", &connections.to_string(), "-m", &streams.to_string()])
        .args(["-t", &connections.min(2).to_string()])
        .arg(format!("--log-file={}", log.display()))
        .args(["-H", &format!("authorization: Bearer {SECRET}")]);
    if let Some(body) = body {
        command.arg("-d").arg(body);
    }
    let output = command.arg(daemon.url(path)).output().map_err(|e| format!("h2load: {e} (install nghttp2-client)"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let line = |prefix: &str| text.lines().find(|l| l.starts_with(prefix)).unwrap_or_default().to_owned();
    let requests_line = line("requests:");
    let number = |word: &str| -> u64 {
        requests_line
            .split(',')
            .find(|part| part.trim().ends_with(word))
            .and_then(|part| part.trim().split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let rate = line("finished in").split(',').nth(1).unwrap_or_default().trim().to_owned();
    let mut micros: Vec<f64> = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split('\t').nth(2)?.trim().parse().ok())
        .collect();
    micros.sort_by(f64::total_cmp);
    let ms = |q: f64| quantile(&micros, q) / 1000.0;
    let non_2xx: u64 = line("status codes:")
        .split(',')
        .filter(|p| !p.contains("2xx"))
        .filter_map(|p| p.trim().split(' ').next()?.parse::<u64>().ok())
        .sum();
    let succeeded = number("succeeded");
    Ok(Row {
        what: what.to_owned(),
        done: format!("{succeeded}/{requests}"),
        rate,
        p50: ms(0.5),
        p90: ms(0.9),
        p99: ms(0.99),
        max: micros.last().copied().unwrap_or(f64::NAN) / 1000.0,
        failed: (number("failed") + number("errored") + number("timeout") + non_2xx)
            .max(u64::from(requests).saturating_sub(succeeded)),
        peak: peak_mib(daemon),
    })
}

fn escape(bin_dir: &Path, home: &Path, daemon: Option<&Daemon>) -> Command {
    let mut command = Command::new(bin_dir.join("escape"));
    command.args(["--width", "512", "--height", "512", "--max-iter", "300"]).env("XCC_HOME", home);
    match daemon {
        Some(d) => command
            .env("XC_PAR_REMOTE", format!("127.0.0.1:{}", d.port))
            .env("XC_PAR_SECRET", SECRET)
            .env("XC_PAR_WORKERS", "remote"),
        None => command.env("XC_PAR_WORKERS", "cpu"),
    };
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command
}

/// Many programs at once; their row and how many gave a wrong total.
fn programs(daemon: &Daemon, o: &Options, home: &Path) -> Result<(Row, u32), String> {
    let want = escape(&o.bin_dir, home, None).output().map_err(|e| format!("escape: {e}"))?;
    let want = String::from_utf8_lossy(&want.stdout).lines().last().unwrap_or_default().to_owned();
    let started = Instant::now();
    let children: Vec<_> = (0..o.programs)
        .map(|_| escape(&o.bin_dir, home, Some(daemon)).spawn().map(|c| (Instant::now(), c)))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("escape: {e}"))?;
    let mut seconds = Vec::new();
    let (mut failed, mut wrong) = (0, 0);
    for (at, child) in children {
        let out = child.wait_with_output().map_err(|e| format!("escape: {e}"))?;
        seconds.push(at.elapsed().as_secs_f64());
        let total = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().to_owned();
        if !out.status.success() {
            failed += 1;
            eprintln!("a program failed: {}", String::from_utf8_lossy(&out.stderr));
        } else if total != want {
            wrong += 1;
        }
    }
    let wall = started.elapsed().as_secs_f64();
    seconds.sort_by(f64::total_cmp);
    let ms = |q: f64| quantile(&seconds, q) * 1000.0;
    let row = Row {
        what: format!("{} escape programs at once (512×512, 300 iterations, remote only)", o.programs),
        done: format!("{}/{}", o.programs - failed - wrong, o.programs),
        rate: format!("{:.2} programs/s", f64::from(o.programs) / wall),
        p50: ms(0.5),
        p90: ms(0.9),
        p99: ms(0.99),
        max: seconds.last().copied().unwrap_or(f64::NAN) * 1000.0,
        failed: u64::from(failed),
        peak: peak_mib(daemon),
    };
    Ok((row, wrong))
}

/// Registers the `scale` block with the daemon.
fn register_scale(daemon: &Daemon) -> Result<BlockDesc, String> {
    let block = BlockDesc {
        name: "scale".into(),
        entry: "scale".into(),
        arrays: vec![
            ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
            ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
        ],
        params: vec![ParamSpec { name: "k".into(), kind: ParamKind::U32 }],
        forms: Forms { wgsl: Some(SCALE.into()), ..Forms::default() },
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let registered = runtime.block_on(async {
        xcd_e2e::client()
            .post(daemon.url("/v1/blocks"))
            .bearer_auth(SECRET)
            .json(&block)
            .send()
            .await
            .map_err(|e| e.to_string())
            .map(|r| r.status())
    })?;
    if !registered.is_success() {
        return Err(format!("registering the block: {registered}"));
    }
    Ok(block)
}

fn run(o: &Options) -> Result<String, String> {
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let daemon = Daemon::build(o.bin_dir.join("xcd")).secret(SECRET).args(&["-mdns", "false"]).start();
    let start_mib = peak_mib(&daemon);
    let block = register_scale(&daemon)?;
    let tile = format!("/v1/blocks/{}/tile?start=0&count={TILE_ITEMS}&params=3", block.id());
    let input = o.out.join("tile-input.bin");
    let bytes: Vec<u8> = (0..TILE_ITEMS).flat_map(u32::to_le_bytes).collect();
    std::fs::write(&input, bytes).map_err(|e| format!("{}: {e}", input.display()))?;
    let mut rows = Vec::new();
    let busy: Concurrency = (16, 8);
    for (what, path, post, concurrency) in [
        ("GET /healthz", "/healthz", false, busy),
        ("GET /v1/version", "/v1/version", false, busy),
        ("GET /v1/devices", "/v1/devices", false, busy),
        ("GET /v1/capacity", "/v1/capacity", false, busy),
        ("GET /metrics", "/metrics", false, busy),
        ("POST …/tile, one at a time", tile.as_str(), true, (1, 1)),
        ("POST …/tile", tile.as_str(), true, busy),
    ] {
        let (connections, streams) = concurrency;
        let what = format!("{what} ({connections}×{streams} in flight)");
        eprintln!("xcd-load: {what}");
        let body = post.then_some(input.as_path());
        let requests = if concurrency == (1, 1) { o.requests / 10 } else { o.requests };
        rows.push(h2load(&daemon, &what, (path, body), concurrency, requests.max(1), &o.out)?);
    }
    eprintln!("xcd-load: {} programs", o.programs);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (row, wrong) = programs(&daemon, o, home.path())?;
    rows.push(row);

    let mut table = format!(
        "Daemon: {} on this machine's {} (started at {start_mib:.0} MiB peak RSS).\n\n\
         Requests with the secret, over TLS and HTTP/2; the tile is 256 items of a u32 kernel, \
         1 KiB each way.\n\n\
         | load | succeeded | rate | p50 ms | p90 ms | p99 ms | max ms | failed | daemon peak RSS MiB |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        o.bin_dir.join("xcd").display(),
        daemon_device(&daemon),
    );
    for r in &rows {
        table.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0} |\n",
            r.what, r.done, r.rate, r.p50, r.p90, r.p99, r.max, r.failed, r.peak
        ));
    }
    std::fs::write(o.out.join("report.md"), &table).map_err(|e| e.to_string())?;
    let failed: u64 = rows.iter().map(|r| r.failed).sum();
    if failed > 0 || wrong > 0 {
        return Err(format!("{table}\n{failed} requests or programs failed, {wrong} programs gave a wrong total"));
    }
    Ok(table)
}

/// The daemon's first device, for the report.
fn daemon_device(daemon: &Daemon) -> String {
    let out = xcd_e2e::curl(&["-H", &format!("Authorization: Bearer {SECRET}"), &daemon.url("/v1/devices")]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["devices"][0]["id"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "device".into())
}

fn main() -> std::process::ExitCode {
    match options().and_then(|o| run(&o)) {
        Ok(table) => {
            println!("{table}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("xcd-load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
