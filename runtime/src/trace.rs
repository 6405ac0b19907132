//! `XC_PAR_TRACE=host:port`: each run's record sent to a monitor (xcmon), never slowing or
//! failing the run.
//!
//! A thread of its own owns the connection. A run hands it the record through a bounded queue
//! and goes on; when the queue is full, or the monitor cannot be reached, records are dropped
//! (a monitor that is down does not make the program slower). After a failed connection it waits
//! [`RETRY`] before trying again. When the program's [`crate::Par`] goes, the thread gets up to
//! [`FLUSH`] to send what is queued, so a short program's only run still reaches the monitor.
//! It owns nothing of the run itself and must not block the caller. A record carries the run's
//! timeline (`crate::timeline`), merged until the record fits its line.

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use xcd_wire::trace::{MAX_LINE, MAX_WORKERS, TraceRun, TraceSpan, TraceWorker, WorkerKind};

use crate::RunReport;
use crate::timeline::Timeline;

/// Records waiting to be sent at most; more are dropped.
const QUEUE: usize = 64;
/// How long connecting and each write may take.
const IO_WAIT: Duration = Duration::from_secs(1);
/// How long after a failed connection the next try waits.
const RETRY: Duration = Duration::from_secs(5);
/// How long a program's exit waits for queued records.
const FLUSH: Duration = Duration::from_secs(1);

/// The sending side of a trace connection.
pub(crate) struct Tracer {
    queue: Option<mpsc::SyncSender<Vec<u8>>>,
    finished: mpsc::Receiver<()>,
}

impl Tracer {
    /// Starts the thread that sends records to `addr` (`host:port`).
    pub(crate) fn start(addr: String) -> std::io::Result<Tracer> {
        let (queue, records) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let (finish, finished) = mpsc::channel();
        std::thread::Builder::new().name("xc-trace".into()).spawn(move || {
            send_all(&addr, &records);
            let _ = finish.send(());
        })?;
        Ok(Tracer { queue: Some(queue), finished })
    }

    /// Queues a run's record; drops it when the queue is full.
    pub(crate) fn send(&self, report: &RunReport, started: SystemTime, timeline: &Timeline) {
        if let Some(queue) = &self.queue {
            let _ = queue.try_send(line(report, started, timeline));
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        // Closing the queue lets the thread finish once it has sent what is there.
        self.queue.take();
        let _ = self.finished.recv_timeout(FLUSH);
    }
}

/// Spans a record carries at most, before merging: about 100 bytes each, so the timeline takes
/// at most about half of a record's [`MAX_LINE`].
const MOST_SPANS: usize = 320;

/// The record's line, with as much of the timeline as keeps it under [`MAX_LINE`]: the spans
/// merged further while it does not fit, and left out when even few do not.
pub(crate) fn line(report: &RunReport, started: SystemTime, timeline: &Timeline) -> Vec<u8> {
    let mut run = record(report, started);
    let place = bound_workers(&mut run.workers);
    let mut most = MOST_SPANS;
    loop {
        let (names, spans, merged) = timeline.spans(most);
        run.spans = spans
            .iter()
            .filter_map(|s| {
                let worker = report.workers.iter().position(|w| Some(&w.name) == names.get(s.worker))?;
                Some(TraceSpan {
                    worker: u16::try_from((*place.get(worker)?)?).ok()?,
                    lane: u16::try_from(s.lane).unwrap_or(u16::MAX),
                    start_us: u64::try_from(s.start.as_micros()).unwrap_or(u64::MAX),
                    end_us: u64::try_from(s.end.as_micros()).unwrap_or(u64::MAX),
                    items: s.items,
                    tiles: s.tiles,
                    failed: s.failed,
                    measuring: s.measuring,
                })
            })
            .collect();
        run.merged = merged;
        let line = run.to_line();
        if line.len() <= MAX_LINE {
            return line;
        }
        if most <= 8 {
            run.spans.clear();
            run.merged = true;
            return run.to_line();
        }
        most /= 2;
    }
}

/// A worker's name or failure longer than this many bytes is shortened in the record (the
/// report keeps it whole).
const MOST_TEXT: usize = 200;

/// The bytes a record's workers take at most: the rest of [`MAX_LINE`] is for the run's facts and
/// its timeline.
const MOST_WORKER_BYTES: usize = MAX_LINE / 2;

/// Bounds a record's workers so that any run's record fits its line and a monitor takes it:
/// names and failures shortened to [`MOST_TEXT`], and past [`MAX_WORKERS`] workers or
/// [`MOST_WORKER_BYTES`], those that computed least folded into one last entry that adds them up.
/// Returns where each worker went in the record (`None`: folded, its spans left out).
fn bound_workers(workers: &mut Vec<TraceWorker>) -> Vec<Option<usize>> {
    for w in workers.iter_mut() {
        shorten(&mut w.name);
        if let Some(failure) = w.failure.as_mut() {
            shorten(failure);
        }
    }
    let size = |w: &TraceWorker| serde_json::to_vec(w).map_or(MOST_TEXT * 3, |v| v.len() + 1);
    let total: usize = workers.iter().map(size).sum();
    if workers.len() <= MAX_WORKERS && total <= MOST_WORKER_BYTES {
        return (0..workers.len()).map(Some).collect();
    }
    // The fold's own entry takes at most about MOST_TEXT.
    let mut by_items: Vec<usize> = (0..workers.len()).collect();
    by_items.sort_by_key(|&i| std::cmp::Reverse(workers[i].items));
    let (mut keep, mut bytes) = (vec![false; workers.len()], MOST_TEXT);
    for i in by_items.into_iter().take(MAX_WORKERS - 1) {
        bytes += size(&workers[i]);
        if bytes > MOST_WORKER_BYTES {
            break;
        }
        keep[i] = true;
    }
    let mut place = Vec::with_capacity(workers.len());
    let (mut kept, mut folded) = (Vec::new(), Vec::new());
    for (w, keep) in std::mem::take(workers).into_iter().zip(keep) {
        place.push(keep.then_some(kept.len()));
        if keep { kept.push(w) } else { folded.push(w) }
    }
    let stopped = folded.iter().filter(|w| w.failure.is_some()).count();
    let fold = TraceWorker {
        kind: folded.first().map_or(WorkerKind::Remote, |w| w.kind),
        name: format!("{} more workers, added up", folded.len()),
        items: folded.iter().map(|w| w.items).sum(),
        tiles: folded.iter().map(|w| w.tiles).sum(),
        busy_seconds: folded.iter().map(|w| w.busy_seconds).sum(),
        failure: (stopped > 0).then(|| format!("{stopped} of them stopped; the program's report says why")),
    };
    kept.push(fold);
    *workers = kept;
    place
}

/// Cuts `text` to at most [`MOST_TEXT`] bytes, at a character's edge, ending it with "…".
fn shorten(text: &mut String) {
    if text.len() > MOST_TEXT {
        let mut end = MOST_TEXT - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
}

/// The record of one run, without its timeline.
pub(crate) fn record(report: &RunReport, started: SystemTime) -> TraceRun {
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_default();
    TraceRun {
        version: xcd_wire::VERSION.to_owned(),
        program,
        pid: std::process::id(),
        source: report.source.clone(),
        block: report.block.clone(),
        items: report.items,
        tiles: report.tiles(),
        started_ms: started.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
        seconds: report.elapsed.as_secs_f64(),
        placement: report.placement.as_ref().map(|c| c.line(&report.block, report.items)),
        workers: report
            .workers
            .iter()
            .map(|w| TraceWorker {
                kind: w.kind,
                name: w.name.clone(),
                items: w.items,
                tiles: w.tiles,
                busy_seconds: w.busy.as_secs_f64(),
                failure: w.failure.clone(),
            })
            .collect(),
        spans: Vec::new(),
        merged: false,
    }
}

/// Sends every record that arrives until the queue closes.
fn send_all(addr: &str, records: &mpsc::Receiver<Vec<u8>>) {
    let mut connection: Option<TcpStream> = None;
    let mut next_try = Instant::now();
    for line in records {
        if connection.is_none() && Instant::now() >= next_try {
            connection = connect(addr);
            if connection.is_none() {
                tracing::debug!("trace monitor {addr} unreachable; runs are not traced for {RETRY:?}");
                next_try = Instant::now() + RETRY;
            }
        }
        if let Some(stream) = connection.as_mut() {
            if stream.write_all(&line).is_err() {
                connection = None;
                next_try = Instant::now() + RETRY;
            }
        }
    }
}

fn connect(addr: &str) -> Option<TcpStream> {
    for ip in addr.to_socket_addrs().ok()? {
        if let Ok(stream) = TcpStream::connect_timeout(&ip, IO_WAIT) {
            let _ = stream.set_write_timeout(Some(IO_WAIT));
            let _ = stream.set_nodelay(true);
            return Some(stream);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::schedule::WorkerStats;

    fn report(workers: usize, name_len: usize) -> RunReport {
        RunReport {
            block: "escape".into(),
            source: "main.rs:1".into(),
            items: 1 << 24,
            elapsed: Duration::from_secs(30),
            workers: (0..workers).map(|i| WorkerStats::new(&format!("remote:{i}:{}", "x".repeat(name_len)))).collect(),
            placement: None,
        }
    }

    #[test]
    fn a_record_keeps_its_timeline_under_the_line_limit() {
        let timeline = Timeline::default();
        let t = Instant::now();
        for i in 0..20_000 {
            timeline.tile(&format!("remote:{}:{}", i % 16, "x".repeat(40)), i % 3, t, 64, i % 997 == 0);
        }
        // Sixteen workers: the spans are merged until the record fits, and it says so.
        let line = line(&report(16, 40), SystemTime::now(), &timeline);
        let run = TraceRun::from_line(&line).expect("a record");
        assert!(line.len() <= MAX_LINE && run.merged, "{} bytes", line.len());
        assert!(!run.spans.is_empty() && run.spans.len() <= MOST_SPANS + 16 * 3 + 25, "{} spans", run.spans.len());
        assert_eq!(run.spans.iter().map(|s| u64::from(s.tiles)).sum::<u64>(), 20_000, "every tile counted");
        assert!(run.spans.iter().filter(|s| s.failed).count() >= 20, "failed tiles kept whole");
        // 256 workers with long names would leave little room: those that computed least are
        // added up in one entry, and the sixteen that ran tiles keep their spans.
        let mut crowded = report(16, 40);
        for w in &mut crowded.workers {
            w.items = 1;
        }
        crowded.workers.extend(report(240, 120).workers);
        let crowded = line_of(&crowded, &timeline);
        let run = TraceRun::from_line(&crowded).expect("a record");
        assert!(crowded.len() <= MAX_LINE && run.merged, "{} bytes", crowded.len());
        assert!(run.workers.last().is_some_and(|w| w.name.ends_with("more workers, added up")));
        assert_eq!(run.spans.iter().map(|s| u64::from(s.tiles)).sum::<u64>(), 20_000, "every tile counted");
    }

    #[test]
    fn a_record_of_any_many_workers_fits_and_adds_up() {
        // 300 daemons with 300-byte names, each stopped with a 2 KB reason: the record is still
        // one a monitor takes, with the busiest workers whole and the rest added up.
        let timeline = Timeline::default();
        let t = Instant::now();
        let mut many = report(300, 300);
        for (i, w) in many.workers.iter_mut().enumerate() {
            (w.items, w.tiles) = (1_000 + i as u64, 1);
            w.failure = Some(format!("the daemon declined: {}", "é".repeat(1_000)));
            timeline.tile(&w.name, 0, t, 64, false);
        }
        let line = line_of(&many, &timeline);
        let run = TraceRun::from_line(&line).expect("a record a monitor takes");
        assert!(run.workers.len() <= MAX_WORKERS, "{} workers", run.workers.len());
        let fold = run.workers.last().expect("workers");
        assert!(fold.name.ends_with("more workers, added up"), "{}", fold.name);
        assert!(fold.failure.as_deref().is_some_and(|f| f.contains("of them stopped")), "{fold:?}");
        assert_eq!(run.workers.iter().map(|w| w.items).sum::<u64>(), many.workers.iter().map(|w| w.items).sum::<u64>());
        // The busiest are kept, their texts shortened at a character's edge.
        assert!(run.workers[..run.workers.len() - 1].iter().all(|w| w.items > 1_000 + 300 - run.workers.len() as u64));
        assert!(run.workers.iter().all(|w| w.name.len() <= MOST_TEXT), "names shortened");
        assert!(run.workers[0].failure.as_deref().is_some_and(|f| f.ends_with("é…")), "{:?}", run.workers[0].failure);
        assert!(run.spans.iter().all(|s| usize::from(s.worker) < run.workers.len() - 1), "spans of kept workers only");
        assert!(!run.spans.is_empty());
        // A record that fits as it is stays whole.
        let small = report(4, 10);
        let run = TraceRun::from_line(&line_of(&small, &timeline)).expect("a record");
        assert_eq!(
            run.workers.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(),
            small.workers.iter().map(|w| w.name.as_str()).collect::<Vec<_>>()
        );
    }

    fn line_of(report: &RunReport, timeline: &Timeline) -> Vec<u8> {
        line(report, SystemTime::now(), timeline)
    }
}
