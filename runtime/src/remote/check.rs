//! `xcrun check host:port`: walks what a program does on first contact with a daemon, one step
//! at a time (address, TCP, TLS and pin, secret, version, layout, forms), and stops at the first
//! that fails with the tutorial's symptom and what to do.

use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use super::RemoteError;
use super::daemon::Daemon;
use crate::home::Home;

/// One step of a check and how it went: Ok(what was seen) or Err(what to do).
pub type CheckStep = (&'static str, Result<String, String>);

/// Checks the daemon at `addr` as a program with `secret` would see it.
pub fn check(addr: &str, home: &Home, secret: Option<&str>, forms: &xcd_wire::Forms) -> Vec<CheckStep> {
    let mut steps: Vec<CheckStep> = Vec::new();
    let with_port = super::with_default_port(addr);
    let ip = match with_port.to_socket_addrs().map(|mut ips| ips.next()) {
        Ok(Some(ip)) => {
            steps.push(("address", Ok(format!("{with_port} is {ip}"))));
            ip
        }
        Ok(None) | Err(_) => {
            steps.push((
                "address",
                Err(format!("cannot connect to {with_port}: the name does not resolve; check the address")),
            ));
            return steps;
        }
    };
    steps.extend(check_at(&with_port, ip, home, secret, forms));
    steps
}

/// Checks the daemon `addr` (`host:port`, naming it and its pin) at address `ip`, from the TCP
/// step on: for a daemon found by multicast DNS, whose name may not resolve here.
pub fn check_at(
    with_port: &str,
    ip: std::net::SocketAddr,
    home: &Home,
    secret: Option<&str>,
    forms: &xcd_wire::Forms,
) -> Vec<CheckStep> {
    let mut steps: Vec<CheckStep> = Vec::new();
    let started = Instant::now();
    match std::net::TcpStream::connect_timeout(&ip, Duration::from_secs(5)) {
        Ok(_) => steps.push(("tcp", Ok(format!("connected in {:.1} ms", started.elapsed().as_secs_f64() * 1e3)))),
        Err(e) => {
            steps.push((
                "tcp",
                Err(format!(
                    "cannot connect to {with_port} ({e}): the daemon is not running, the address is wrong, or a firewall drops the port"
                )),
            ));
            return steps;
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            steps.push(("tls", Err(format!("cannot start: {e}"))));
            return steps;
        }
    };
    let pinned = home.get(&super::daemon::pin_key(with_port)).ok().flatten();
    match runtime.block_on(Daemon::connect(with_port, ip, home, secret)) {
        Ok(daemon) => {
            let kept = match pinned {
                Some(_) => "matches its pin".to_owned(),
                None => format!("first contact: pin kept in {}", home.path().display()),
            };
            steps.push(("tls+pin", Ok(kept)));
            steps.push(("secret", Ok(if secret.is_some() { "accepted".into() } else { "none needed".into() })));
            steps.push(("version", Ok(xcd_wire::VERSION.to_owned())));
            steps.push(("layout", Ok(xcd_wire::Layout::native().to_string())));
            steps.push(("forms", forms_taken(&daemon, forms)));
        }
        Err(e) => refused(&mut steps, e),
    }
    steps
}

/// Which form each of the daemon's devices takes from `forms`, or the first device that takes none.
fn forms_taken(daemon: &Daemon, forms: &xcd_wire::Forms) -> Result<String, String> {
    let mut takes = Vec::new();
    for device in &daemon.devices {
        match xcd_wire::form_for(device.backend, forms, xcd_wire::FormPolicy::Remake) {
            Some(form) => takes.push(format!("{} takes {form}", device.id)),
            None => {
                return Err(format!(
                    "the daemon has no form for its GPU: {} needs {}; the block must carry its WGSL",
                    device.id,
                    xcd_wire::forms_taken(device.backend, xcd_wire::FormPolicy::Remake)[0]
                ));
            }
        }
    }
    Ok(takes.join(", "))
}

/// The steps of a connection the daemon refused: those before the refusal passed, then the
/// step that failed, with what to do.
fn refused(steps: &mut Vec<CheckStep>, e: RemoteError) {
    let failed_at = match &e {
        RemoteError::Unreachable { .. } | RemoteError::PinChanged { .. } => "tls+pin",
        RemoteError::SecretRefused { .. } | RemoteError::SecretNotSet { .. } => "secret",
        RemoteError::Version { .. } => "version",
        RemoteError::Layout { .. } => "layout",
        RemoteError::Declined { .. } => "capacity",
        RemoteError::NoForm { .. } => "forms",
        RemoteError::Failed { .. }
        | RemoteError::Forgotten { .. }
        | RemoteError::Stalled { .. }
        | RemoteError::NotFound(_) => "daemon",
    };
    let passed: &[&str] = match failed_at {
        "secret" => &["tls+pin"],
        "version" | "capacity" | "daemon" => &["tls+pin", "secret"],
        "layout" => &["tls+pin", "secret", "version"],
        _ => &[],
    };
    for step in passed {
        steps.push((step, Ok("ok".into())));
    }
    steps.push((failed_at, Err(e.to_string())));
}
