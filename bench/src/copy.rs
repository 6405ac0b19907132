//! Streaming throughput: a copy block of 64 MiB in and 64 MiB out through a daemon, by the
//! program side's own remote worker, against the same bytes sent and echoed back over a bare
//! rustls connection, and the same block on this machine's own device; with each, the CPU time
//! it took (program and daemon apart), and the payload bytes xcd's own code copied on each side
//! per byte moved ([`xcd_wire::copies`]): more than one copy per byte fails the measure, the
//! smoke run included, so that a new copy shows.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use xcd_runtime::{Args, Par, WorkerChoice};

use crate::{Options, blocks, echo};

/// Sends `bytes` over a fresh TLS connection to the raw echo server and reads them all back,
/// writing and reading at once; how long that took.
pub(crate) async fn raw_echo(addr: std::net::SocketAddr, bytes: Arc<Vec<u8>>) -> Result<Duration, String> {
    // The program side's own TLS set-up, taking the echo server's certificate as on first contact:
    // the baseline measures the transport only.
    let (config, _) = xcd_runtime::remote::pin::client_config(None).map_err(|e| e.to_string())?;
    let tcp = tokio::net::TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let stream =
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.map_err(|e| e.to_string())?;
    let (mut read, mut write) = tokio::io::split(stream);
    let started = Instant::now();
    let total = bytes.len();
    let writer = tokio::spawn(async move {
        for chunk in bytes.chunks(1 << 20) {
            write.write_all(chunk).await?;
        }
        write.flush().await?;
        Ok::<_, std::io::Error>(write)
    });
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0;
    while got < total {
        let n = read.read(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the echo ended early".into());
        }
        got += n;
    }
    let took = started.elapsed();
    let _ = writer.await;
    Ok(took)
}

/// The best of `reps` runs of the copy block on `par`, after one to warm up; checks the copy.
pub(crate) fn best_run(par: &Par, x: &[u32], reps: usize) -> Result<Duration, String> {
    let block = blocks::copy();
    let mut y = vec![0u32; x.len()];
    let mut best = Duration::MAX;
    for rep in 0..=reps {
        y.fill(0);
        let started = Instant::now();
        par.run(&block, x.len() as u32, Args::new().input(x).output(&mut y)).map_err(|e| e.to_string())?;
        if rep > 0 {
            best = best.min(started.elapsed());
        }
        if y != x {
            return Err("the copy came back wrong".into());
        }
    }
    Ok(best)
}

/// What one side did over some runs: CPU seconds and payload bytes copied by its own code.
#[derive(Clone, Copy, Default)]
struct Spent {
    cpu: f64,
    copied: f64,
}

impl Spent {
    fn since(self, before: Spent) -> Spent {
        Spent { cpu: self.cpu - before.cpu, copied: self.copied - before.copied }
    }
}

/// This process so far.
fn here() -> Spent {
    Spent { cpu: xcd_e2e::cpu_seconds(std::process::id()), copied: xcd_wire::copies::copied() as f64 }
}

/// The daemon so far, and the tile bytes it has moved in and out.
fn there(daemon: &xcd_e2e::Daemon) -> (Spent, f64) {
    let copied = daemon.metric(crate::SECRET, "xcd_payload_bytes_copied_total");
    let moved = daemon.metric(crate::SECRET, "xcd_tile_input_bytes_total")
        + daemon.metric(crate::SECRET, "xcd_tile_output_bytes_total");
    (Spent { cpu: xcd_e2e::cpu_seconds(daemon.pid()), copied }, moved)
}

/// More copies per byte than this on either side is a regression (each byte is copied once).
const MOST_COPIES_PER_BYTE: f64 = 1.05;

pub(crate) fn run(o: &Options) -> Result<String, String> {
    let (items, reps) = if o.quick { (1u32 << 20, 1) } else { (16u32 << 20, 3) };
    let bytes = u64::from(items) * 4;
    let runs = (reps + 1) as f64;
    let daemon = crate::daemon(o).start();
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let settings = |workers: Vec<WorkerChoice>| crate::settings(workers, &[daemon.port], home.path());
    let x: Vec<u32> = (0..items).collect();
    let remote = Par::new(settings(vec![WorkerChoice::Remote])).map_err(|e| e.to_string())?;
    let (program_before, (daemon_before, moved_before)) = (here(), there(&daemon));
    let through_xcd = best_run(&remote, &x, reps)?;
    let program = here().since(program_before);
    let (daemon_after, moved_after) = there(&daemon);
    let served = daemon_after.since(daemon_before);
    drop(remote);
    let local = Par::new(settings(vec![crate::local_gpu(o)?])).map_err(|e| e.to_string())?;
    let before = here();
    let on_device = best_run(&local, &x, reps)?;
    let device = here().since(before);
    drop(local);

    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let echo_home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data: Arc<Vec<u8>> = Arc::new(bytemuck::cast_slice(&x).to_vec());
    let before = here();
    let raw = runtime.block_on(async {
        let addr = echo::raw(echo::tls(echo_home.path())?, "127.0.0.1").await?;
        let mut best = Duration::MAX;
        for _ in 0..=reps {
            best = best.min(raw_echo(addr, data.clone()).await?);
        }
        Ok::<_, String>(best)
    })?;
    let tls = here().since(before);
    let program_copies = program.copied / (2.0 * bytes as f64 * runs);
    let daemon_copies = served.copied / (moved_after - moved_before).max(1.0);
    if program_copies > MOST_COPIES_PER_BYTE || daemon_copies > MOST_COPIES_PER_BYTE {
        return Err(format!(
            "the copy block copied each byte {program_copies:.2} times in the program and {daemon_copies:.2} times in the \
             daemon: at most once each is the design (xcd_wire::copies lists where)"
        ));
    }
    Ok(report(Figures {
        bytes,
        reps,
        through_xcd,
        raw,
        on_device,
        program,
        served,
        device,
        tls,
        program_copies,
        daemon_copies,
    }))
}

/// Everything the copy measure found.
struct Figures {
    bytes: u64,
    reps: usize,
    through_xcd: Duration,
    raw: Duration,
    on_device: Duration,
    program: Spent,
    served: Spent,
    device: Spent,
    tls: Spent,
    program_copies: f64,
    daemon_copies: f64,
}

fn report(f: Figures) -> String {
    let runs = (f.reps + 1) as f64;
    let mib = f.bytes as f64 / f64::from(1 << 20);
    let rate = |d: Duration| format!("{:.0} MiB/s", mib / d.as_secs_f64());
    let cpu = |s: f64| format!("{:.3} s", s / runs);
    let row = |what: &str, d: Duration, spent: &str| {
        format!("| {what} | {:.3} s | {} each way | {spent} |\n", d.as_secs_f64(), rate(d))
    };
    let mut text = format!(
        "## Streaming throughput\n\nA copy block of {mib:.0} MiB in and {mib:.0} MiB out (u32 items), best of {} after a warm-up; \
         CPU is per run, averaged over all {runs} runs.\n\n| what | time | rate | CPU per run |\n|---|---:|---:|---:|\n",
        f.reps
    );
    let xcd_cpu = format!("{} program + {} daemon", cpu(f.program.cpu), cpu(f.served.cpu));
    text.push_str(&row("xcd: the block through a daemon on loopback (remote worker only)", f.through_xcd, &xcd_cpu));
    text.push_str(&row(
        "baseline: the same bytes sent and echoed over one bare rustls connection",
        f.raw,
        &format!("{} (both ends)", cpu(f.tls.cpu)),
    ));
    text.push_str(&row("the same block on this machine's own device, in process", f.on_device, &cpu(f.device.cpu)));
    let larger = f.raw.max(f.on_device).as_secs_f64();
    text.push_str(&format!(
        "\nxcd against the larger baseline: **{:.2}×** (goal ≤ 1.15×); against the bare TLS copy: {:.2} of its rate. \
         Copies per byte by xcd's own code, outside TLS, HTTP/2 and the GPU API: **{:.2} in the program, {:.2} in the daemon** \
         (at most {MOST_COPIES_PER_BYTE} each, checked). CPU: xcd {:.3} s per run against {:.3} s for TLS and the device together.\n",
        f.through_xcd.as_secs_f64() / larger,
        f.raw.as_secs_f64() / f.through_xcd.as_secs_f64(),
        f.program_copies,
        f.daemon_copies,
        (f.program.cpu + f.served.cpu) / runs,
        (f.tls.cpu + f.device.cpu) / runs,
    ));
    text
}
