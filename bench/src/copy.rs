//! Streaming throughput: a copy block of 64 MiB in and 64 MiB out through a daemon, by the
//! program side's own remote worker, against the same bytes sent and echoed back over a bare
//! rustls connection, and the same block on this machine's own device.

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

pub(crate) fn run(o: &Options) -> Result<String, String> {
    let (items, reps) = if o.quick { (1u32 << 20, 1) } else { (16u32 << 20, 3) };
    let bytes = u64::from(items) * 4;
    let daemon = crate::daemon(o).start();
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let settings = |workers: Vec<WorkerChoice>| crate::settings(workers, &[daemon.port], home.path());
    let x: Vec<u32> = (0..items).collect();
    let remote = Par::new(settings(vec![WorkerChoice::Remote])).map_err(|e| e.to_string())?;
    let through_xcd = best_run(&remote, &x, reps)?;
    drop(remote);
    let local = Par::new(settings(vec![WorkerChoice::Gpu])).map_err(|e| e.to_string())?;
    let on_device = best_run(&local, &x, reps)?;
    drop(local);

    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let echo_home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data: Arc<Vec<u8>> = Arc::new(bytemuck::cast_slice(&x).to_vec());
    let raw = runtime.block_on(async {
        let addr = echo::raw(echo::tls(echo_home.path())?, "127.0.0.1").await?;
        let mut best = Duration::MAX;
        for _ in 0..=reps {
            best = best.min(raw_echo(addr, data.clone()).await?);
        }
        Ok::<_, String>(best)
    })?;
    let mib = bytes as f64 / f64::from(1 << 20);
    let rate = |d: Duration| format!("{:.0} MiB/s", mib / d.as_secs_f64());
    let row = |what: &str, d: Duration| format!("| {what} | {:.3} s | {} each way |\n", d.as_secs_f64(), rate(d));
    let mut text = format!(
        "## Streaming throughput\n\nA copy block of {mib:.0} MiB in and {mib:.0} MiB out (u32 items), best of {reps} after a warm-up.\n\n\
         | what | time | rate |\n|---|---:|---:|\n"
    );
    text.push_str(&row("xcd: the block through a daemon on loopback (remote worker only)", through_xcd));
    text.push_str(&row("baseline: the same bytes sent and echoed over one bare rustls connection", raw));
    text.push_str(&row("the same block on this machine's own device, in process", on_device));
    text.push_str(&format!(
        "\nxcd against the bare TLS copy: **{:.2}** (goal ≥ 0.90); against the in-process device: {:.2}.\n",
        raw.as_secs_f64() / through_xcd.as_secs_f64(),
        on_device.as_secs_f64() / through_xcd.as_secs_f64()
    ));
    Ok(text)
}
