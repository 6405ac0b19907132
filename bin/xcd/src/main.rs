//! xcd, the par daemon: serves this machine's GPUs to programs on other machines over HTTP/2
//! with TLS. Only wires things together: flags and variables are read here once, everything
//! else lives in the library crates (xcd-api, xcd-engine).
#![forbid(unsafe_code)]

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use xcd_api::{AppState, Config, Identity, Limits, Nimby, Secret, TrustedProxies};

/// mimalloc returns freed memory to the system within moments, where glibc's allocator keeps
/// what its per-thread arenas once held: after a burst of uploads and answers, the daemon's
/// memory drops back (docs/security.md, "The memory ceiling"). It is built without transparent
/// huge pages (`no_thp`), or each reuse of memory it gave back zeroes a whole 2 MiB page
/// (docs/performance.md: a third of the daemon's CPU while streaming).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `XC_PAR_SECRET`: a program must send it to use this daemon.
const XC_PAR_SECRET: &str = "XC_PAR_SECRET";
/// `XCD_HOME`: where the key and certificate live (default `~/.xcc/xcd`).
const XCD_HOME: &str = "XCD_HOME";
/// `XCD_PRETEND_VERSION`: in debug builds only, the version the daemon says it is, so tests can
/// run a daemon of another version. Release builds ignore it.
const XCD_PRETEND_VERSION: &str = "XCD_PRETEND_VERSION";
/// Exit code for bad flags or settings (EX_USAGE).
const EXIT_USAGE: u8 = 64;
/// Exit code when there is nothing to serve (EX_UNAVAILABLE).
const EXIT_UNAVAILABLE: u8 = 69;

/// xcd serves this machine's GPUs to par programs on other machines, over HTTP/2 with TLS.
///
/// Flags take one dash or two (-port 7227 or --port 7227). Set XC_PAR_SECRET to require a
/// secret; XCD_HOME (default ~/.xcc/xcd) keeps the TLS key and certificate.
#[derive(Parser, Debug)]
#[command(version, about, long_about = None)]
struct Cli {
    /// TCP port to listen on (0: any free port; the serving line says which).
    #[arg(long, default_value_t = xcd_wire::rest::DEFAULT_PORT)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    listen: IpAddr,
    /// Pool name programs find this daemon by (XC_PAR_POOL).
    #[arg(long, value_name = "NAME")]
    pool: Option<String>,
    /// Advertise this daemon with multicast DNS (on the -listen address's interface only, when
    /// that is not 0.0.0.0): true or false.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    mdns: bool,
    /// Local hours kept for this machine's owner, when no work is taken: 09:00-17:00[,22:00-02:00…].
    #[arg(long, value_name = "RANGES")]
    nimby: Option<String>,
    /// Devices to serve: indexes in `xcrun devices` order, or parts of their names
    /// (e.g. cuda, 0,1, llvmpipe), comma-separated. Default: every GPU.
    #[arg(long, value_name = "LIST")]
    devices: Option<String>,
    /// Serve plain HTTP/2 (h2c) and HTTP/1.1 without TLS, for a TLS-terminating proxy in front.
    #[arg(long)]
    plain: bool,
    /// Print the certificate's whole SHA-256 fingerprint and exit.
    #[arg(long)]
    fingerprint: bool,
    /// Seconds to let tiles in flight finish after SIGTERM or SIGINT.
    #[arg(long, default_value_t = 30, value_name = "SECONDS")]
    grace: u64,
    /// Tiles a program should keep in flight per device.
    #[arg(long, default_value_t = 3)]
    depth: u32,
    /// Tile streams open at once; past it a new stream is refused as busy.
    #[arg(long, default_value_t = 256, value_name = "N")]
    max_streams: u64,
    /// Reverse proxies in front of this daemon, whose X-Forwarded-For names the client (for the
    /// page's recent work and refusals): addresses or networks, comma-separated
    /// (e.g. 127.0.0.1 or 10.0.0.0/24). Nobody else's X-Forwarded-For is believed.
    #[arg(long, value_name = "ADDRS", default_value = "")]
    trust_proxy: String,
    /// Wrong secrets one address may send before every request from it with a secret is refused
    /// for a while (1 s, doubling with each further wrong one, up to 5 minutes).
    #[arg(long, default_value_t = 5, value_name = "N")]
    secret_failures: u32,
    /// MiB of clients' data the daemon holds at once, in all (docs/security.md, "The memory
    /// ceiling"): 4/17 for uploads being received, 4/17 for tile data, 8/17 for whole arrays,
    /// 1/17 for block descriptions; each device keeps no more whole arrays than that share, nor
    /// 1 GiB. The default, 4352, gives 1 GiB, 1 GiB, 2 GiB and 256 MiB.
    #[arg(long, default_value_t = 4352, value_name = "MIB", value_parser = clap::value_parser!(u64).range(68..))]
    memory: u64,
    /// Seconds one tile may run on a device. Past it the program gets an error, the device is
    /// taken out of service (a kernel that never ends) and the daemon tries to bring it back.
    #[arg(long, default_value_t = 60, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    tile_deadline: u64,
    /// Load a block's own PTX, SPIR-V or MSL as the program sent it, instead of making the
    /// device's form from the block's WGSL. Faster to register, but a program's code then
    /// reaches the driver unchecked: its buffer accesses are not bounds-checked, so it can read
    /// or write other programs' tiles, and its arithmetic is only as exact as its author made it
    /// (docs/security.md). Only for programs you trust.
    #[arg(long)]
    trust_forms: bool,
}

fn home() -> PathBuf {
    if let Some(dir) = std::env::var_os(XCD_HOME).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    xcd_home::user_home().join(".xcc").join("xcd")
}

/// Keeps the devices `-devices` names, in the order discovered.
fn select(devices: Vec<xcd_engine::DeviceHandle>, wanted: Option<&str>) -> Vec<xcd_engine::DeviceHandle> {
    let Some(wanted) = wanted else { return devices };
    let items: Vec<String> = wanted.split(',').map(|s| s.trim().to_lowercase()).filter(|s| !s.is_empty()).collect();
    devices
        .into_iter()
        .enumerate()
        .filter(|(i, d)| {
            let id = d.info().id.to_lowercase();
            items.iter().any(|item| item.parse::<usize>().map_or_else(|_| id.contains(item.as_str()), |n| n == *i))
        })
        .map(|(_, d)| d)
        .collect()
}

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("xcd: {message}");
    ExitCode::from(code)
}

/// Raises the soft limit on open files toward the hard one, up to `wanted`: each connection is a
/// file, and services often start with a soft limit of 1024. Says so when the hard limit is lower.
#[cfg(unix)]
fn raise_open_files(wanted: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return };
    let target = hard.min(wanted);
    if soft < target {
        if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, target, hard) {
            eprintln!("xcd: warning: cannot raise the open-file limit from {soft} to {target}: {e}");
            return;
        }
    }
    let allowed = soft.max(target);
    if allowed < wanted {
        eprintln!(
            "xcd: warning: this process may open {allowed} files (ulimit -n), so connections past about {} are refused; raise the hard limit (LimitNOFILE= in a systemd unit)",
            allowed.saturating_sub(64)
        );
    }
}

/// Mesa's drivers print `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` on
/// every Vulkan device they open when the variable is unset, as it is under a systemd system
/// service or in a container: an operator would read "error" on a healthy start. So a daemon
/// without one starts itself again (same process, `exec`) with a private directory of its own,
/// `$TMPDIR/xcd-runtime-<uid>`, mode 0700.
#[cfg(target_os = "linux")]
fn runtime_dir() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|dir| std::path::Path::new(&dir).is_dir()) {
        return;
    }
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else { return };
    let dir = std::env::temp_dir().join(format!("xcd-runtime-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    // Only a directory that is ours and private: another user could have made it first.
    let ours = std::fs::symlink_metadata(&dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0);
    let Ok(exe) = std::env::current_exe() else { return };
    if ours {
        // Returns only if the exec failed: then the daemon goes on as it is.
        let _ = std::process::Command::new(exe).args(std::env::args_os().skip(1)).env("XDG_RUNTIME_DIR", &dir).exec();
    }
}

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    runtime_dir();
    let cli: Cli = xcd_cli::parse();
    init_logging();

    let home = home();
    let identity = match Identity::load_or_create(&home) {
        Ok(identity) => identity,
        Err(e) => return fail(EXIT_USAGE, format!("{XCD_HOME} {}: {e}", home.display())),
    };
    if cli.fingerprint {
        println!("{}", identity.fingerprint_hex());
        return ExitCode::SUCCESS;
    }
    let nimby = match cli.nimby.as_deref().map(Nimby::parse).transpose() {
        Ok(nimby) => nimby.unwrap_or_default(),
        Err(e) => return fail(EXIT_USAGE, e),
    };
    let trusted_proxies: TrustedProxies = match cli.trust_proxy.parse() {
        Ok(trusted) => trusted,
        Err(e) => return fail(EXIT_USAGE, e),
    };
    let secret = std::env::var(XC_PAR_SECRET).ok().filter(|s| !s.is_empty()).map(|s| Secret::new(&s));
    let tls = match (!cli.plain).then(|| identity.server_config()).transpose() {
        Ok(tls) => tls,
        Err(e) => return fail(EXIT_USAGE, e),
    };

    let forms = if cli.trust_forms { xcd_wire::FormPolicy::Trust } else { xcd_wire::FormPolicy::Remake };
    let limits = Limits { max_streams: cli.max_streams, secret_failures: cli.secret_failures, ..Limits::default() }
        .with_memory(cli.memory << 20);
    let devices = match open_devices(&cli, &limits, forms) {
        Ok(devices) => devices,
        Err(code) => return code,
    };

    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(1, format!("cannot start: {e}")),
    };
    #[cfg(unix)]
    raise_open_files((limits.max_connections + limits.unproven_connections) as u64 + 256);
    let version = if cfg!(debug_assertions) { std::env::var(XCD_PRETEND_VERSION).ok() } else { None };
    let advertised_version = version.clone().unwrap_or_else(|| xcd_wire::VERSION.to_owned());
    let config = Config {
        secret,
        nimby,
        pool: cli.pool.clone(),
        limits,
        depth: cli.depth,
        version,
        fingerprint: (!cli.plain).then(|| identity.fingerprint_hex()),
        host: Some(xcd_discovery::host_name()),
        trusted_proxies,
        forms,
    };
    if cli.trust_forms {
        eprintln!(
            "xcd: warning: -trust-forms: programs' own PTX, SPIR-V and MSL reach the driver unchecked; serve only programs you trust"
        );
    }
    let secret_set = config.secret.is_some();
    let state = AppState::new(config, devices.clone());
    let serving = Serving { cli, identity, devices, home, secret_set, advertised_version };
    runtime.block_on(serve(serving, state, tls))
}

/// What the daemon serves with, once set up.
struct Serving {
    cli: Cli,
    identity: Identity,
    devices: Vec<xcd_engine::DeviceHandle>,
    home: PathBuf,
    secret_set: bool,
    advertised_version: String,
}

/// Listens, says so, advertises on mDNS where asked, and serves until a signal; then drains,
/// withdraws the advertisement and says it stopped.
async fn serve(serving: Serving, state: AppState, tls: Option<std::sync::Arc<rustls::ServerConfig>>) -> ExitCode {
    let Serving { cli, identity, devices, home, secret_set, advertised_version } = serving;
    let listener = match tokio::net::TcpListener::bind((cli.listen, cli.port)).await {
        Ok(listener) => listener,
        Err(e) => return fail(1, format!("cannot listen on {}:{}: {e}", cli.listen, cli.port)),
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(cli.port);
    say_serving(&cli, port, &devices, &identity, &home, secret_set);
    let (listen, mdns, grace) = (cli.listen, cli.mdns, cli.grace);
    let advert = move |state: &AppState| {
        let availability = state.availability();
        xcd_discovery::Advert {
            version: advertised_version.clone(),
            pool: cli.pool.clone(),
            layout: xcd_wire::Layout::native().to_string(),
            fingerprint: (!cli.plain).then(|| identity.fingerprint_hex()),
            devices: devices.iter().map(|d| d.info().id.clone()).collect(),
            accepting: availability.is_accepting(),
            reason: availability.why(),
        }
    };
    let advertiser = if mdns { advertise(listen, port, &state, advert) } else { None };
    xcd_api::serve(listener, tls, state, shutdown_signal(), Duration::from_secs(grace)).await;
    if let Some(advertiser) = advertiser {
        // It sees the daemon draining at its next check and withdraws the record.
        let _ = tokio::time::timeout(ADVERT_EVERY * 2, advertiser).await;
    }
    eprintln!("xcd: stopped");
    ExitCode::SUCCESS
}

/// Logs to standard error, as `RUST_LOG` says or at info for xcd's own crates.
fn init_logging() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                // naga's SPIR-V reader warns about NoContraction on every float operation of a
                // client's kernel; the decoration is ours (docs/kernels.md), so say nothing.
                .unwrap_or_else(|_| "warn,naga=error,xcd=info,xcd_api=info".into()),
        )
        .init();
}

/// The devices to serve: every one found, or those `-devices` names; with none, the discovery
/// notes and the exit code.
fn open_devices(
    cli: &Cli,
    limits: &Limits,
    forms: xcd_wire::FormPolicy,
) -> Result<Vec<xcd_engine::DeviceHandle>, ExitCode> {
    let inventory = xcd_engine::discover_with(xcd_engine::Options {
        tile_deadline: std::time::Duration::from_secs(cli.tile_deadline),
        forms,
        // A device keeps no more whole arrays than the daemon does (on llvmpipe, host memory).
        whole_bytes: limits.array_cache_bytes.min(xcd_engine::whole::WHOLE_BYTES_KEPT),
        ..xcd_engine::Options::default()
    });
    let devices = select(inventory.devices, cli.devices.as_deref());
    if devices.is_empty() {
        for note in &inventory.notes {
            eprintln!("xcd: {note}");
        }
        let which = cli.devices.as_deref().map(|d| format!(" matching -devices {d}")).unwrap_or_default();
        let message = format!("no device{which} to serve; `xcrun devices` lists this machine's devices");
        return Err(fail(EXIT_UNAVAILABLE, message));
    }
    Ok(devices)
}

/// The lines that say the daemon serves: its devices, port and certificate, and what to know.
fn say_serving(
    cli: &Cli,
    port: u16,
    devices: &[xcd_engine::DeviceHandle],
    identity: &Identity,
    home: &std::path::Path,
    secret_set: bool,
) {
    let names: Vec<&str> = devices.iter().map(|d| d.info().id.as_str()).collect();
    let how = if cli.plain {
        "plain HTTP/2 and HTTP/1.1 without TLS (for a TLS-terminating proxy in front)".to_owned()
    } else {
        format!("certificate {}…", &identity.fingerprint_hex()[..8])
    };
    println!("xcd: serving {} on port {port}, {how}", names.join(", "));
    for device in devices.iter().filter(|d| d.info().cpu) {
        println!(
            "xcd: {} is a CPU device: this machine has no GPU, so its tiles run on the processor",
            device.info().id
        );
    }
    if identity.created {
        eprintln!("xcd: made a new certificate under {}", home.display());
    }
    if !secret_set {
        eprintln!(
            "xcd: warning: {XC_PAR_SECRET} is not set, so this daemon takes any program that has no secret, from any address; set a secret on any network you share"
        );
    }
}

/// How often the advertisement is checked against the daemon's state (NIMBY hours, draining).
const ADVERT_EVERY: Duration = Duration::from_secs(2);

/// Advertises the daemon on mDNS and keeps the record true until the daemon drains, then
/// withdraws it (the returned task ends then). A failure to advertise is said once; the daemon serves all the same.
fn advertise(
    listen: IpAddr,
    port: u16,
    state: &AppState,
    advert: impl Fn(&AppState) -> xcd_discovery::Advert + Send + 'static,
) -> Option<tokio::task::JoinHandle<()>> {
    let scope = xcd_discovery::Scope::of_listen_address(listen);
    let mut advertiser = match xcd_discovery::Advertiser::start(scope, port, advert(state)) {
        Ok(advertiser) => advertiser,
        Err(e) => {
            eprintln!("xcd: not advertised on multicast DNS ({e}); programs must name it in XC_PAR_REMOTE");
            return None;
        }
    };
    let state = state.clone();
    Some(tokio::spawn(async move {
        let mut every = tokio::time::interval(ADVERT_EVERY);
        let mut draining = false;
        while !draining {
            every.tick().await;
            let now = advert(&state);
            draining = state.availability() == xcd_api::Availability::Draining;
            if let Err(e) = advertiser.update(&now) {
                tracing::warn!("cannot update the mDNS advertisement: {e}");
            }
        }
        // Draining: withdraw now, so programs stop finding a daemon that is going.
        let _ = tokio::task::spawn_blocking(move || advertiser.withdraw(Duration::from_secs(1))).await;
    }))
}

/// Completes on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(e) => {
                tracing::warn!("cannot watch SIGTERM: {e}");
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
    tracing::info!("stopping: no new work; tiles in flight finish");
}
