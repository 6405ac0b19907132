//! The daemon's own page (`GET /` of xcd): what it serves, whether it takes work, its recent
//! work and refusals; and the form that asks for its secret first.

use askama::Template;

use crate::chart::Chart;

/// One device of the daemon.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceRow {
    /// `vulkan:llvmpipe (…)`.
    pub id: String,
    /// `cuda`, `vulkan`, `metal`, or `vulkan (CPU)` for a software device.
    pub kind: String,
    /// `3.1 GiB free of 80.0 GiB`, or what is known.
    pub memory: String,
    /// Why the device is out of service, while it is.
    pub lost: Option<String>,
}

/// Recent work from one program on one block and device.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkRow {
    /// The program's address.
    pub client: String,
    /// The block's name.
    pub block: String,
    /// The device it ran on.
    pub device: String,
    /// Tiles done.
    pub tiles: u64,
    /// Items done.
    pub items: u64,
    /// Tiles that failed.
    pub failed: u64,
    /// When it last ran a tile: `4 s ago`.
    pub last: String,
}

/// A request or tile the daemon refused.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusalRow {
    /// When: `12 s ago`.
    pub when: String,
    /// Who asked.
    pub client: String,
    /// The refusal's code, e.g. `secret_refused`.
    pub code: String,
    /// What was asked: `POST /v1/blocks`.
    pub what: String,
}

/// The daemon's page.
#[derive(Debug, Template)]
#[template(path = "daemon.html")]
pub struct DaemonPage {
    /// `xcd on gpu-box`.
    pub title: String,
    /// Facts about it (version, layout, pool, certificate, up for …), in order.
    pub facts: Vec<(&'static str, String)>,
    /// `accepting`, or `not taking work: …`.
    pub state: String,
    /// True when it takes work.
    pub accepting: bool,
    /// Its NIMBY hours, or `none`.
    pub nimby: String,
    /// Tiles running or queued now.
    pub in_flight: u64,
    /// Tile streams open now.
    pub streams: u64,
    /// Its devices.
    pub devices: Vec<DeviceRow>,
    /// Items per second over the last minutes.
    pub chart: Chart,
    /// Recent work, most recent first.
    pub work: Vec<WorkRow>,
    /// Recent refusals, most recent first.
    pub refusals: Vec<RefusalRow>,
    /// Seconds between reloads of the page.
    pub refresh: u32,
}

/// The form that asks for the daemon's secret before showing anything about it.
#[derive(Debug, Template)]
#[template(path = "login.html")]
pub struct LoginPage {
    /// True after a wrong secret.
    pub failed: bool,
    /// Seconds this address is held back after too many wrong secrets.
    pub held: Option<u64>,
}

/// `4 s ago`, `3 min ago`, `2 h ago`.
pub fn ago(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s ago"),
        120..7200 => format!("{} min ago", secs / 60),
        _ => format!("{} h ago", secs / 3600),
    }
}

/// A device's memory as far as its driver tells: `3.1 GiB free of 80.0 GiB`.
pub fn memory(free: Option<u64>, total: Option<u64>) -> String {
    match (free, total) {
        (Some(free), Some(total)) => format!("{} free of {}", bytes(free), bytes(total)),
        (None, Some(total)) => format!("{} (the driver does not say how much is free)", bytes(total)),
        (Some(free), None) => format!("{} free", bytes(free)),
        (None, None) => "not told by the driver".to_owned(),
    }
}

/// `1.5 GiB`.
pub fn bytes(n: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let n = n as f64;
    if n >= GIB { format!("{:.1} GiB", n / GIB) } else { format!("{:.0} MiB", n / MIB) }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn page() -> DaemonPage {
        DaemonPage {
            title: "xcd on box".into(),
            facts: vec![("version", "0.1.0".into()), ("pool", "<render>".into())],
            state: "not taking work: nimby until 17:00".into(),
            accepting: false,
            nimby: "09:00-17:00".into(),
            in_flight: 2,
            streams: 1,
            devices: vec![DeviceRow {
                id: "vulkan:llvmpipe <x>".into(),
                kind: "vulkan (CPU)".into(),
                memory: "1.0 GiB".into(),
                lost: Some("ran a tile for more than 60 s <x>".into()),
            }],
            chart: Chart::of(&[0.0, 5.0], Duration::from_secs(2)),
            work: vec![WorkRow {
                client: "127.0.0.1".into(),
                block: "escape".into(),
                device: "vulkan:llvmpipe".into(),
                tiles: 10,
                items: 1000,
                failed: 0,
                last: ago(3),
            }],
            refusals: vec![RefusalRow {
                when: ago(300),
                client: "10.0.0.9".into(),
                code: "secret_refused".into(),
                what: "GET /v1/devices".into(),
            }],
            refresh: 5,
        }
    }

    #[test]
    fn the_page_shows_everything_escaped() {
        let html = page().render().expect("renders");
        for want in [
            "<title>xcd on box</title>",
            "&#60;render&#62;",
            "vulkan:llvmpipe &#60;x&#62;",
            "not taking work: nimby until 17:00",
            "out of service: ran a tile for more than 60 s &#60;x&#62;",
            "09:00-17:00",
            "<polyline",
            "escape",
            "3 s ago",
            "secret_refused",
            "5 min ago",
            "http-equiv=\"refresh\" content=\"5\"",
        ] {
            assert!(html.contains(want), "{want:?} in {html}");
        }
        assert!(!html.contains("<render>") && !html.contains("<script"), "{html}");
        let mut quiet = page();
        quiet.work.clear();
        quiet.refusals.clear();
        let html = quiet.render().expect("renders");
        assert!(html.contains("No work yet") && html.contains("No refusals"), "{html}");
    }

    #[test]
    fn the_login_form_says_nothing_about_the_daemon() {
        let html = LoginPage { failed: false, held: None }.render().expect("renders");
        assert!(html.contains("<form method=\"post\"") && html.contains("type=\"password\""), "{html}");
        assert!(!html.contains("not this daemon"), "{html}");
        let html = LoginPage { failed: true, held: None }.render().expect("renders");
        assert!(html.contains("not this daemon"), "{html}");
        let html = LoginPage { failed: true, held: Some(8) }.render().expect("renders");
        assert!(html.contains("try again in 8 s") && !html.contains("not this daemon"), "{html}");
    }

    #[test]
    fn times_and_sizes_read_well() {
        assert_eq!([ago(5), ago(600), ago(10_000)], ["5 s ago", "10 min ago", "2 h ago"]);
        assert_eq!([bytes(512 << 20), bytes(3 << 30)], ["512 MiB", "3.0 GiB"]);
        assert_eq!(memory(Some(1 << 30), Some(2 << 30)), "1.0 GiB free of 2.0 GiB");
        assert_eq!(memory(None, None), "not told by the driver");
    }
}
