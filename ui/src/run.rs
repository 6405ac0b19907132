//! One run's own page: its timeline, with a lane per worker lane and each tile drawn from its
//! start to its end, on one time axis. Tiles that failed (and ran again elsewhere) are red,
//! tiles run while placement measured are pale, a worker that stopped says why beside its lanes,
//! and a remote worker's round trip shows as the gap between its tiles. A record whose tiles
//! were merged says so; one from an older program, with no timeline, says that instead.

use askama::Template;
use xcd_monitor::Received;
use xcd_wire::trace::{TraceSpan, WorkerKind};

use crate::runs::{CPU, GPU, REMOTE, RunView};

/// Width of a lane's drawing, in SVG units.
const WIDTH: f64 = 1000.0;
/// Narrowest bar drawn, so that a tile of a few microseconds still shows.
const THINNEST: f64 = 0.6;

/// One tile (or merged tiles) as a bar of a lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Where it starts, in SVG units.
    pub x: f64,
    /// How wide it is.
    pub width: f64,
    /// Its fill.
    pub color: &'static str,
    /// `failed`, `measuring` or empty: how it is drawn.
    pub class: &'static str,
    /// What it was, for its tooltip: `4096 items, 12.3–52.1 ms`.
    pub title: String,
}

/// One lane of one worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// The worker's report name, and the lane when it has several: `remote:… (lane 2)`.
    pub name: String,
    /// Why the worker stopped, on its first lane, if it did.
    pub stopped: Option<String>,
    /// Its tiles.
    pub bars: Vec<Bar>,
}

/// A label of the time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeTick {
    /// Where, in SVG units.
    pub x: f64,
    /// `250 ms`.
    pub label: String,
}

/// A run's page.
#[derive(Debug, Template)]
#[template(path = "run.html")]
pub struct RunPage {
    /// The run as the runs table shows it.
    pub run: RunView,
    /// When it started, from the record: seconds since the Unix epoch, for people: UTC.
    pub started: String,
    /// Its lanes, by worker then lane.
    pub lanes: Vec<Lane>,
    /// The time axis.
    pub ticks: Vec<TimeTick>,
    /// Whether adjacent tiles were merged into spans to keep the record small.
    pub merged: bool,
    /// Tiles in the record's timeline, and in the run: they differ where merged.
    pub spans: usize,
}

impl RunPage {
    /// The page of run `id`.
    pub fn of(id: u64, received: &Received) -> RunPage {
        let run = &received.run;
        let total_us = (run.seconds * 1e6).max(1.0);
        let end_us = run.spans.iter().map(|s| s.end_us).max().unwrap_or(0) as f64;
        let scale = WIDTH / total_us.max(end_us);
        let mut keys: Vec<(u16, u16)> = run.spans.iter().map(|s| (s.worker, s.lane)).collect();
        keys.sort_unstable();
        keys.dedup();
        let lanes = keys
            .into_iter()
            .filter_map(|(w, lane)| {
                let worker = run.workers.get(usize::from(w))?;
                let several = run.spans.iter().any(|s| s.worker == w && s.lane != lane);
                let name = if several { format!("{} (lane {lane})", worker.name) } else { worker.name.clone() };
                let first_lane = run.spans.iter().filter(|s| s.worker == w).map(|s| s.lane).min() == Some(lane);
                let stopped = if first_lane { worker.failure.clone() } else { None };
                let color = match worker.kind {
                    WorkerKind::Remote => REMOTE,
                    WorkerKind::Gpu => GPU,
                    WorkerKind::Cpu => CPU,
                };
                let bars = run
                    .spans
                    .iter()
                    .filter(|s| (s.worker, s.lane) == (w, lane))
                    .map(|s| bar(s, scale, color))
                    .collect();
                Some(Lane { name, stopped, bars })
            })
            .collect();
        let span = total_us.max(end_us);
        let ticks =
            [0.0, 0.25, 0.5, 0.75, 1.0].into_iter().map(|f| TimeTick { x: f * WIDTH, label: time(f * span) }).collect();
        let started = format_epoch_ms(run.started_ms);
        RunPage { run: RunView::of(id, received), started, lanes, ticks, merged: run.merged, spans: run.spans.len() }
    }
}

fn bar(s: &TraceSpan, scale: f64, color: &'static str) -> Bar {
    let x = s.start_us as f64 * scale;
    let width = (s.end_us.saturating_sub(s.start_us) as f64 * scale).max(THINNEST);
    let what = if s.tiles > 1 { format!("{} tiles, {} items", s.tiles, s.items) } else { format!("{} items", s.items) };
    let how = match (s.failed, s.measuring) {
        (true, _) => ", failed: ran again elsewhere",
        (false, true) => ", while measuring placement",
        _ => "",
    };
    Bar {
        x,
        width,
        color: if s.failed { "#b00" } else { color },
        class: if s.failed {
            "failed"
        } else if s.measuring {
            "measuring"
        } else {
            ""
        },
        title: format!("{what}, {}–{}{how}", time(s.start_us as f64), time(s.end_us as f64)),
    }
}

/// Microseconds for an axis or a tooltip: `850 µs`, `12.3 ms`, `2.50 s`.
fn time(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

/// Milliseconds since the Unix epoch as `2026-12-02 04:31:05 UTC`.
fn format_epoch_ms(ms: u64) -> String {
    i64::try_from(ms).ok().and_then(chrono::DateTime::from_timestamp_millis).map_or_else(
        || format!("{ms} ms after 1970 (beyond the calendar)"),
        |t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use xcd_wire::trace::{TraceRun, TraceWorker};

    use super::*;

    fn received(workers: Vec<TraceWorker>, spans: Vec<TraceSpan>) -> Received {
        Received {
            from: "10.0.0.5:40000".parse().expect("address"),
            at: SystemTime::UNIX_EPOCH,
            run: TraceRun {
                version: "0.1.0".into(),
                program: "esc\"ape".into(),
                pid: 42,
                source: "main.rs:60".into(),
                block: "<script>alert(1)</script>".into(),
                items: 16 * 4096,
                tiles: 48,
                started_ms: 1_764_650_000_000,
                seconds: 0.5,
                placement: None,
                workers,
                spans,
                merged: true,
            },
        }
    }

    fn span(worker: u16, lane: u16, start_us: u64, failed: bool) -> TraceSpan {
        TraceSpan { worker, lane, start_us, end_us: start_us + 10_000, items: 4096, tiles: 1, failed, measuring: false }
    }

    #[test]
    fn sixteen_lanes_with_hostile_names_are_drawn_escaped() {
        let workers: Vec<TraceWorker> = (0..16)
            .map(|i| TraceWorker {
                kind: if i % 2 == 0 { WorkerKind::Remote } else { WorkerKind::Gpu },
                name: format!("remote:<b>host{i}</b>:\"dev'{i}\""),
                items: 4096,
                tiles: 3,
                busy_seconds: 0.03,
                failure: (i == 3).then(|| "the daemon <i>stopped</i> answering".to_owned()),
            })
            .collect();
        let mut spans: Vec<TraceSpan> =
            (0..16).flat_map(|w| (0..3).map(move |t| span(w, 0, t * 20_000, false))).collect();
        spans.push(span(3, 1, 5_000, true));
        spans.push(TraceSpan { measuring: true, ..span(5, 0, 400_000, false) });
        // A span naming a worker the record does not have is left out, not a panic.
        spans.push(span(99, 0, 0, false));
        let page = RunPage::of(7, &received(workers, spans));
        assert_eq!(page.lanes.len(), 17, "16 workers, one of them with two lanes");
        assert_eq!(page.lanes[3].name, "remote:<b>host3</b>:\"dev'3\" (lane 0)");
        assert!(page.lanes[3].stopped.is_some() && page.lanes[4].stopped.is_none());
        assert_eq!(
            page.ticks.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(),
            ["0 µs", "125.0 ms", "250.0 ms", "375.0 ms", "500.0 ms"]
        );
        assert_eq!(page.started, "2025-12-02 04:33:20 UTC");
        let html = page.render().expect("renders");
        assert!(!html.contains("<script>alert") && !html.contains("<b>host"), "escaped: {html}");
        assert!(
            html.contains("&#60;script&#62;alert(1)&#60;/script&#62;") && html.contains("&#60;i&#62;stopped"),
            "{html}"
        );
        assert!(html.contains("class=\"failed\"") && html.contains("class=\"measuring\""), "{html}");
        assert!(html.contains("merged"), "the page says the tiles were merged: {html}");
        assert_eq!(html.matches("<rect").count(), 16 * 3 + 2 + 3, "every span a bar, plus the legend's three");
    }

    #[test]
    fn a_record_without_a_timeline_says_so() {
        let worker = TraceWorker {
            kind: WorkerKind::Cpu,
            name: "cpu".into(),
            items: 1,
            tiles: 1,
            busy_seconds: 0.1,
            failure: None,
        };
        let mut old = received(vec![worker], Vec::new());
        old.run.merged = false;
        let html = RunPage::of(0, &old).render().expect("renders");
        assert!(html.contains("sent no timeline"), "{html}");
        assert!(!html.contains("merged"), "{html}");
    }
}
