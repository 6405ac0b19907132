//! xcmon: serves a page (port 7480) showing the daemons found on the subnet by multicast DNS and
//! the runs programs send to its trace port (7482, `XC_PAR_TRACE=monitor-host:7482`), updated
//! live with server-sent events; given `XC_PAR_SECRET`, it also reads each daemon for live
//! figures ([`live`]). Only wires things together: the intake and store are xcd-monitor's, the
//! HTML is xcd-ui's, the browsing is xcd-discovery's, the reading xcd-runtime's.
#![forbid(unsafe_code)]

mod live;

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::IpAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use askama::Template;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use clap::Parser;
use futures_util::Stream;
use tokio::sync::broadcast;
use xcd_discovery::{Browser, Change, FoundDaemon, Scope};
use xcd_monitor::{IntakeLimits, Store};
use xcd_ui::{DaemonsPage, MonitorPage, RunPage, RunsPage};

/// xcmon shows the daemons on the subnet and the runs programs send it, in a browser page.
///
/// Flags take one dash or two (-port 7480 or --port 7480).
#[derive(Parser, Debug)]
#[command(
    version,
    about,
    long_about = None,
    after_help = "Environment:\n  XC_PAR_SECRET  the daemons' secret: xcmon then reads each daemon it finds every 2 s \
                  (memory, tiles in flight, throughput), pinning its certificate as programs do\n  \
                  XCC_HOME       where those pins live (default ~/.xcc)"
)]
struct Cli {
    /// Port of the page (0: any free port; the first line printed says which).
    #[arg(long, default_value_t = 7480)]
    port: u16,
    /// Port programs send their runs to (XC_PAR_TRACE=this-host:PORT).
    #[arg(long, default_value_t = xcd_wire::trace::TRACE_PORT)]
    trace_port: u16,
    /// Address to listen on, for the page and the trace port.
    #[arg(long, default_value = "0.0.0.0")]
    listen: IpAddr,
    /// Look for daemons with multicast DNS (on the -listen address's interface only, when that
    /// is not 0.0.0.0): true or false.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    mdns: bool,
}

/// What the page reads.
#[derive(Clone)]
struct App {
    store: Store,
    daemons: Arc<Mutex<BTreeMap<String, FoundDaemon>>>,
    /// What xcmon read from the daemons themselves, where it has their secret.
    figures: Option<live::Figures>,
    /// Tells the pages a section changed: `daemons` or `runs`.
    changed: broadcast::Sender<&'static str>,
    trace_port: u16,
}

fn main() -> ExitCode {
    let cli: Cli = xcd_cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn,xcmon=info".into()),
        )
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("xcmon: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    let page = match tokio::net::TcpListener::bind((cli.listen, cli.port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("xcmon: cannot listen on {}:{} for the page: {e}", cli.listen, cli.port);
            return ExitCode::FAILURE;
        }
    };
    let traces = match tokio::net::TcpListener::bind((cli.listen, cli.trace_port)).await {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("xcmon: cannot listen on {}:{} for traces: {e}", cli.listen, cli.trace_port);
            return ExitCode::FAILURE;
        }
    };
    let page_port = page.local_addr().map_or(cli.port, |a| a.port());
    let trace_port = traces.local_addr().map_or(cli.trace_port, |a| a.port());
    let (changed, _) = broadcast::channel(64);
    let secret = std::env::var(xcd_runtime::settings::XC_PAR_SECRET).ok().filter(|s| !s.is_empty());
    let figures = secret.as_ref().map(|_| live::Figures::default());
    let app = App { store: Store::default(), daemons: Arc::default(), figures, changed, trace_port };
    tokio::spawn(xcd_monitor::serve_intake(traces, app.store.clone(), IntakeLimits::default()));
    let mut runs = app.store.follow();
    let notify = app.changed.clone();
    tokio::spawn(async move {
        // A follower that lagged still learns that runs changed.
        while let Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) = runs.recv().await {
            let _ = notify.send("runs");
        }
    });
    if cli.mdns {
        browse(Scope::of_listen_address(cli.listen), app.clone());
    }
    if let (Some(secret), Some(figures)) = (secret, app.figures.clone()) {
        let home = xcd_runtime::home::Home::from_env(std::env::var(xcd_runtime::settings::XCC_HOME).ok());
        let notify = app.changed.clone();
        tokio::spawn(live::read(app.daemons.clone(), figures, secret, home, move || {
            let _ = notify.send("daemons");
        }));
    }
    println!("xcmon: page at http://localhost:{page_port}/, traces on port {trace_port}");
    let router = Router::new()
        .route("/", get(index))
        .route("/daemons", get(daemons))
        .route("/runs", get(runs_section))
        .route("/runs/{id}", get(run_page))
        .route("/events", get(events))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(app);
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    if let Err(e) = axum::serve(page, router).with_graceful_shutdown(stop).await {
        eprintln!("xcmon: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// Follows the daemons on the subnet in a thread of its own (mdns-sd's API blocks).
fn browse(scope: Scope, app: App) {
    let spawned = std::thread::Builder::new().name("xcmon-mdns".into()).spawn(move || {
        let mut browser = match Browser::start(scope) {
            Ok(browser) => browser,
            Err(e) => {
                eprintln!("xcmon: cannot look for daemons: {e}");
                return;
            }
        };
        loop {
            let changes = browser.poll(Instant::now() + Duration::from_secs(1));
            if changes.is_empty() {
                continue;
            }
            let mut daemons = app.daemons.lock();
            for change in changes {
                match change {
                    Change::Appeared(found) | Change::Updated(found) => {
                        daemons.insert(found.name.clone(), found);
                    }
                    Change::Left(name) => {
                        daemons.remove(&name);
                    }
                }
            }
            drop(daemons);
            let _ = app.changed.send("daemons");
        }
    });
    if let Err(e) = spawned {
        eprintln!("xcmon: cannot look for daemons: {e}");
    }
}

fn html(template: &impl Template) -> Response {
    match template.render() {
        Ok(text) => Html(text).into_response(),
        Err(e) => {
            (axum::http::StatusCode::INTERNAL_SERVER_ERROR, format!("cannot render the page: {e}")).into_response()
        }
    }
}

fn daemons_page(app: &App) -> DaemonsPage {
    let live = app.figures.as_ref().map(live::Figures::views).unwrap_or_default();
    let daemons = app.daemons.lock();
    DaemonsPage::of(daemons.values(), &live, app.figures.is_some())
}

fn runs_page(app: &App) -> RunsPage {
    RunsPage::of(&app.store.runs(), app.store.first_id(), app.store.counts().0)
}

async fn index(State(app): State<App>) -> Response {
    let sections = (daemons_page(&app).render(), runs_page(&app).render());
    match sections {
        (Ok(daemons), Ok(runs)) => html(&MonitorPage { trace_port: app.trace_port, daemons, runs }),
        (Err(e), _) | (_, Err(e)) => {
            (axum::http::StatusCode::INTERNAL_SERVER_ERROR, format!("cannot render the page: {e}")).into_response()
        }
    }
}

async fn daemons(State(app): State<App>) -> Response {
    let mut response = html(&daemons_page(&app));
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    response
}

async fn runs_section(State(app): State<App>) -> Response {
    let mut response = html(&runs_page(&app));
    response.headers_mut().insert(header::CACHE_CONTROL, header::HeaderValue::from_static("no-store"));
    response
}

/// `/runs/<id>`: one run's own page, with its timeline.
async fn run_page(State(app): State<App>, Path(id): Path<String>) -> Response {
    let received = id.parse::<u64>().ok().and_then(|id| app.store.run(id).map(|r| (id, r)));
    match received {
        Some((id, received)) => html(&RunPage::of(id, &received)),
        None => (
            axum::http::StatusCode::NOT_FOUND,
            format!(
                "no run {id} here: runs are numbered as they arrive, and xcmon keeps the newest {} (see the runs on /)",
                xcd_monitor::KEEP_RUNS
            ),
        )
            .into_response(),
    }
}

/// Server-sent events: `daemons` or `runs` when that section changed.
async fn events(State(app): State<App>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let changes = app.changed.subscribe();
    let stream = futures_util::stream::unfold(changes, |mut changes| async move {
        loop {
            match changes.recv().await {
                Ok(part) => return Some((Ok(Event::default().event(part).data("changed")), changes)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
