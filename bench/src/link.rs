//! Over a shaped link: the daemon in one network namespace and the program in another, joined by
//! a veth pair whose rate `tc … tbf` caps both ways, with a delay each way added by a relay in the
//! program's namespace (this kernel has no netem). The copy block's rate each way is set against
//! the same bytes echoed by a bare rustls server in the daemon's namespace, through the same relay
//! and link, and against the link's nominal rate; and the escape block (2048×2048, 1000
//! iterations) over each link against the bare veth pair, its compute bound. Needs root.
//!
//! The outer run starts the daemon and the echo server in namespace b and re-runs this binary in
//! namespace a (`--inner-link`), which measures and prints its figures.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use xcd_e2e::netns::{B_ADDR, NetPair};
use xcd_e2e::relay::Relay;
use xcd_runtime::{Par, WorkerChoice};

use crate::{Options, copy, echo};

/// The links measured: tbf rate (none: the bare veth pair, escape's compute bound), its bits per
/// second, and the delay each way.
const LINKS: [(Option<&str>, f64, Duration); 3] = [
    (None, f64::INFINITY, Duration::ZERO),
    (Some("1gbit"), 1e9, Duration::from_micros(500)),
    (Some("100mbit"), 1e8, Duration::from_millis(5)),
];
/// escape's size over the links: width, height, iterations.
const ESCAPE: (u32, u32, u32) = (2048, 2048, 1000);

pub(crate) fn run(o: &Options) -> Result<String, String> {
    let items: u32 = if o.quick { 1 << 18 } else { 4 << 20 };
    let mib = f64::from(items) * 4.0 / f64::from(1 << 20);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut text = format!(
        "## Over a shaped link\n\nThe copy block, {mib:.0} MiB each way, from a program in one network namespace to a daemon in \
         another; the veth pair between them capped both ways with `tc … tbf` (burst 64 KiB), a delay added each way by a \
         relay in the program's namespace. Baseline: the same bytes echoed by a bare rustls server in the daemon's \
         namespace through the same relay and link. Best of 2 after a warm-up.\n\n\
         escape's bound on a link is the larger of its time on the bare veth pair (compute) and its results' bytes at the \
         baseline's rate (transfer).\n\n\
         | link | xcd each way | baseline each way | xcd / baseline | xcd / link rate | escape | escape / its bound |\n\
         |---|---:|---:|---:|---:|---:|---:|\n"
    );
    let mut bound = None;
    for (rate, bits, delay) in LINKS {
        let net = match NetPair::create("bn") {
            Ok(net) => net,
            Err(e) => return Ok(format!("## Over a shaped link\n\nskipped: {e} (needs root for `ip netns`)\n")),
        };
        if let Some(rate) = rate {
            net.shape(rate)?;
        }
        let daemon = crate::daemon(o).netns(&net.b, B_ADDR).start();
        let mut server = NetPair::exec(&net.b, &exe)
            .arg("--inner-echo")
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("the echo server: {e}"))?;
        let mut first = String::new();
        let stdout = server.stdout.take().ok_or("the echo server's output")?;
        BufReader::new(stdout).read_line(&mut first).map_err(|e| e.to_string())?;
        let echo_port = first.trim().strip_prefix("port ").ok_or_else(|| format!("the echo server said {first:?}"))?;
        let out = NetPair::exec(&net.a, &exe)
            .args(["--inner-link", &format!("{B_ADDR}:{}", daemon.port), &format!("{B_ADDR}:{echo_port}")])
            .args([&delay.as_micros().to_string(), &items.to_string()])
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| e.to_string())?;
        let _ = server.kill();
        let _ = server.wait();
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        let seconds = |key: &str| -> Result<f64, String> {
            report
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| format!("no {key} in {report:?}"))
        };
        let (xcd, raw, escape) = (seconds("xcd ")?, seconds("raw ")?, seconds("escape ")?);
        let link_mib = bits / 8.0 / f64::from(1 << 20);
        let compute = *bound.get_or_insert(escape);
        let results_mib = f64::from(ESCAPE.0) * f64::from(ESCAPE.1) * 4.0 / f64::from(1 << 20);
        let transfer = results_mib / (mib / raw);
        text.push_str(&format!(
            "| {}, {} ms each way | {:.1} MiB/s | {:.1} MiB/s | {:.2} | {} | {escape:.3} s | {:.2} |\n",
            rate.unwrap_or("bare veth"),
            delay.as_secs_f64() * 1000.0,
            mib / xcd,
            mib / raw,
            raw / xcd,
            if bits.is_finite() { format!("{:.2}", mib / xcd / link_mib) } else { "–".to_owned() },
            escape / compute.max(transfer)
        ));
    }
    Ok(text)
}

/// In the daemon's namespace: a bare rustls echo server on its address; prints its port, then
/// serves until killed.
pub(crate) fn inner_echo() -> Result<(), String> {
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let addr = runtime.block_on(echo::raw(echo::tls(home.path())?, B_ADDR))?;
    println!("port {}", addr.port());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// In the program's namespace: relays to the daemon and the echo server with `delay` each way,
/// then times the copy block through the daemon and the raw echo; prints `xcd S` and `raw S`.
pub(crate) fn inner_link(daemon: &str, echo_addr: &str, delay: &str, items: &str) -> Result<(), String> {
    let parse = |a: &str| a.parse::<std::net::SocketAddr>().map_err(|e| format!("{a}: {e}"));
    let delay = Duration::from_micros(delay.parse().map_err(|e| format!("delay: {e}"))?);
    let items: u32 = items.parse().map_err(|e| format!("items: {e}"))?;
    let to_daemon = Relay::start(parse(daemon)?, delay);
    let to_echo = Relay::start(parse(echo_addr)?, delay);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let par = Par::new(crate::settings(vec![WorkerChoice::Remote], &[to_daemon.port], home.path()))
        .map_err(|e| e.to_string())?;
    let x: Vec<u32> = (0..items).collect();
    let xcd = copy::best_run(&par, &x, 2)?;
    let data: Arc<Vec<u8>> = Arc::new(bytemuck::cast_slice(&x).to_vec());
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let echo_at: std::net::SocketAddr = ([127, 0, 0, 1], to_echo.port).into();
    let raw = runtime.block_on(async {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            best = best.min(copy::raw_echo(echo_at, data.clone()).await?);
        }
        Ok::<_, String>(best)
    })?;
    let (width, height, iters) = ESCAPE;
    let block = xcd_kernels::escape();
    let mut counts = vec![0u32; (width * height) as usize];
    let mut escape = Duration::MAX;
    for rep in 0..3 {
        let args = xcd_runtime::Args::new().u32(width).u32(height).u32(iters).output(&mut counts);
        let started = std::time::Instant::now();
        par.run(&block, width * height, args).map_err(|e| e.to_string())?;
        if rep > 0 {
            escape = escape.min(started.elapsed());
        }
    }
    println!("escape {}", escape.as_secs_f64());
    println!("xcd {}", xcd.as_secs_f64());
    println!("raw {}", raw.as_secs_f64());
    Ok(())
}
