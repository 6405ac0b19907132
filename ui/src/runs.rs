//! The runs programs sent to xcmon: a view model per run (its workers' shares as bar segments,
//! its fallbacks) and the page fragment that lists them, newest first, each linked to its own
//! page (`run`).

use askama::Template;
use xcd_monitor::Received;
use xcd_wire::trace::WorkerKind;

/// Colours of the bar segments, by worker kind: this machine's CPU, its GPUs, remote GPUs.
pub(crate) const CPU: &str = "#8a8f98";
pub(crate) const GPU: &str = "#3b7dd8";
pub(crate) const REMOTE: &str = "#e0862d";

/// One worker's share of a run, as a segment of the run's bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The worker's report name.
    pub name: String,
    /// Its items as a percentage of the run's.
    pub percent: f64,
    /// Where its segment starts, in percent of the bar.
    pub x: f64,
    /// The segment's colour.
    pub color: &'static str,
}

/// One run, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub struct RunView {
    /// Its number in xcmon's store: its page is `/runs/<id>`.
    pub id: u64,
    /// The sending program and its address: `escape (pid 42) from 10.0.0.5`.
    pub program: String,
    /// `file:line` of the run in the program.
    pub source: String,
    /// The block's name.
    pub block: String,
    /// Items in the run.
    pub items: u64,
    /// Tiles, all workers together.
    pub tiles: u64,
    /// Wall time, `2.71 s`.
    pub time: String,
    /// Items per second, `6.19 M/s`.
    pub rate: String,
    /// The workers that ran tiles.
    pub shares: Vec<Share>,
    /// Workers that stopped, and why: their tiles ran on the others.
    pub fallbacks: Vec<String>,
    /// The placement line, when the program chose its workers.
    pub placement: Option<String>,
}

impl RunView {
    /// The view of received run number `id`.
    pub fn of(id: u64, received: &Received) -> RunView {
        let run = &received.run;
        let mut x = 0.0;
        let shares = run
            .workers
            .iter()
            .filter(|w| w.items > 0)
            .map(|w| {
                let percent = 100.0 * w.items as f64 / run.items.max(1) as f64;
                let color = match w.kind {
                    WorkerKind::Remote => REMOTE,
                    WorkerKind::Gpu => GPU,
                    WorkerKind::Cpu => CPU,
                };
                let share = Share { name: w.name.clone(), percent, x, color };
                x += percent;
                share
            })
            .collect();
        let fallbacks =
            run.workers.iter().filter_map(|w| w.failure.as_ref().map(|f| format!("{} stopped: {f}", w.name))).collect();
        RunView {
            id,
            program: format!("{} (pid {}) from {}", run.program, run.pid, received.from.ip()),
            source: run.source.clone(),
            block: run.block.clone(),
            items: run.items,
            tiles: run.tiles,
            time: format!("{:.2} s", run.seconds),
            rate: format!("{:.2} M/s", run.items as f64 / run.seconds.max(1e-9) / 1e6),
            shares,
            fallbacks,
            placement: run.placement.clone(),
        }
    }
}

/// The list of runs, newest first.
#[derive(Debug, Template)]
#[template(path = "runs.html")]
pub struct RunsPage {
    /// The runs to show.
    pub runs: Vec<RunView>,
    /// Lines refused by the intake so far.
    pub refused: u64,
}

impl RunsPage {
    /// The page for `received` (oldest first, as the store keeps them, the first numbered
    /// `first`).
    pub fn of(received: &[Received], first: u64, refused: u64) -> RunsPage {
        let runs = received.iter().enumerate().rev().map(|(i, r)| RunView::of(first + i as u64, r)).collect();
        RunsPage { runs, refused }
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use xcd_wire::trace::{TraceRun, TraceWorker};

    use super::*;

    fn received(workers: Vec<TraceWorker>) -> Received {
        Received {
            from: "10.0.0.5:40000".parse().expect("address"),
            at: SystemTime::UNIX_EPOCH,
            run: TraceRun {
                version: "0.1.0".into(),
                program: "escape".into(),
                pid: 42,
                source: "main.rs:60".into(),
                block: "<script>alert(1)</script>".into(),
                items: 1000,
                tiles: 9,
                started_ms: 0,
                seconds: 0.5,
                placement: Some("par: placement of escape at 2^9 items: gpu, remembered".into()),
                workers,
                spans: Vec::new(),
                merged: false,
            },
        }
    }

    fn worker(kind: WorkerKind, name: &str, items: u64, failure: Option<&str>) -> TraceWorker {
        let failure = failure.map(str::to_owned);
        TraceWorker { kind, name: name.into(), items, tiles: 1, busy_seconds: 0.1, failure }
    }

    #[test]
    fn shares_lie_end_to_end_coloured_by_kind() {
        let view = RunView::of(
            0,
            &received(vec![
                worker(WorkerKind::Cpu, "cpu", 250, None),
                worker(WorkerKind::Gpu, "gpu:vulkan:llvmpipe", 0, Some("device lost")),
                worker(WorkerKind::Remote, "remote:gpu-box:cuda:NVIDIA H200", 750, None),
            ]),
        );
        assert_eq!(view.shares.len(), 2, "workers that ran nothing get no segment");
        assert_eq!((view.shares[0].x, view.shares[0].percent, view.shares[0].color), (0.0, 25.0, CPU));
        assert_eq!((view.shares[1].x, view.shares[1].percent, view.shares[1].color), (25.0, 75.0, REMOTE));
        assert_eq!(view.fallbacks, ["gpu:vulkan:llvmpipe stopped: device lost"]);
        assert_eq!(view.rate, "0.00 M/s");
        assert_eq!(view.program, "escape (pid 42) from 10.0.0.5");
    }

    #[test]
    fn the_page_lists_runs_newest_first_and_escapes_what_programs_send() {
        let mut older = received(vec![worker(WorkerKind::Cpu, "cpu", 1000, None)]);
        older.run.block = "older".into();
        let newer = received(vec![worker(WorkerKind::Remote, "remote:a&b:cuda:x", 1000, Some("the daemon said <no>"))]);
        let html = RunsPage::of(&[older, newer], 10, 3).render().expect("renders");
        assert!(html.contains("href=\"runs/11\"") && html.contains("href=\"runs/10\""), "{html}");
        assert!(!html.contains("<script>alert"), "{html}");
        // askama escapes with numeric references.
        assert!(html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"), "{html}");
        assert!(html.contains("remote:a&#38;b:cuda:x"), "{html}");
        assert!(html.contains("the daemon said &#60;no&#62;"), "{html}");
        assert!(html.find("&#60;script&#62;").expect("newer") < html.find("older").expect("older"), "newest first");
        assert!(html.contains("<svg") && html.contains(r#"width="100%""#), "{html}");
        assert!(html.contains("3 lines refused"), "{html}");
        assert!(!html.contains("http://") && !html.contains("https://"), "no outside resources: {html}");
        let empty = RunsPage::of(&[], 0, 0).render().expect("renders");
        assert!(empty.contains("No runs yet"), "{empty}");
    }
}
