//! A run's timeline: when each tile ran, on which worker and which of its lanes, whether it
//! failed and whether it was part of placement's measuring, for the trace record (xcmon draws it
//! as the run's page).
//!
//! Bounded whatever the run's length: past [`KEPT`] spans, adjacent spans of the same lane are
//! merged pairwise (a failed span never is), and the record says it was merged. Owns nothing of
//! the run: the scheduler calls [`Timeline::tile`] as each tile ends, placement marks when it
//! measures. It must not touch workers, the board or the trace connection.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Spans kept during a run before adjacent ones are merged.
pub(crate) const KEPT: usize = 4096;

/// One tile, or adjacent tiles of one lane merged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    /// Index into the timeline's worker names (`Timeline::spans` gives them).
    pub(crate) worker: usize,
    /// Which of the worker's lanes.
    pub(crate) lane: usize,
    /// When it started and ended, from the run's start.
    pub(crate) start: Duration,
    pub(crate) end: Duration,
    /// Items and tiles in it.
    pub(crate) items: u64,
    pub(crate) tiles: u32,
    /// A tile that failed (and ran again elsewhere).
    pub(crate) failed: bool,
    /// Run while placement was measuring.
    pub(crate) measuring: bool,
}

#[derive(Debug, Default)]
struct Spans {
    names: Vec<String>,
    spans: Vec<Span>,
    merged: bool,
}

/// The spans of one run, recorded from the lanes' threads.
#[derive(Debug)]
pub(crate) struct Timeline {
    started: Instant,
    measuring: AtomicBool,
    spans: Mutex<Spans>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline { started: Instant::now(), measuring: AtomicBool::new(false), spans: Mutex::default() }
    }
}

impl Timeline {
    /// Records a tile of `items` that worker `name`'s lane `lane` started at `started` and has
    /// just ended.
    pub(crate) fn tile(&self, name: &str, lane: usize, started: Instant, items: u32, failed: bool) {
        let (start, end) = (started.saturating_duration_since(self.started), self.started.elapsed());
        let measuring = self.measuring.load(Ordering::Relaxed);
        let mut spans = self.spans.lock();
        let worker = match spans.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                spans.names.push(name.to_owned());
                spans.names.len() - 1
            }
        };
        spans.spans.push(Span { worker, lane, start, end, items: u64::from(items), tiles: 1, failed, measuring });
        if spans.spans.len() > KEPT {
            let all = std::mem::take(&mut spans.spans);
            spans.spans = merge_pairs(all);
            spans.merged = true;
        }
    }

    /// Marks the tiles that end from now on as measuring (or not).
    pub(crate) fn measuring(&self, on: bool) {
        self.measuring.store(on, Ordering::Relaxed);
    }

    /// The workers' names (what [`Span::worker`] indexes), the spans in start order, at most
    /// `most` of them (merged further if need be), and whether any were merged.
    pub(crate) fn spans(&self, most: usize) -> (Vec<String>, Vec<Span>, bool) {
        let spans = self.spans.lock();
        let (mut list, mut merged) = (spans.spans.clone(), spans.merged);
        while list.len() > most.max(1) {
            let before = list.len();
            list = merge_pairs(list);
            merged = true;
            if list.len() == before {
                break;
            }
        }
        list.sort_by_key(|s| s.start);
        (spans.names.clone(), list, merged)
    }
}

/// Merges each lane's spans two by two, in start order: about half as many. A failed span, and
/// a span whose neighbour differs in being measured, is kept whole.
fn merge_pairs(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_by_key(|s| (s.worker, s.lane, s.start));
    let mut out: Vec<Span> = Vec::with_capacity(spans.len() / 2 + 1);
    let mut open = false;
    for span in spans {
        match out.last_mut() {
            Some(last)
                if open
                    && (last.worker, last.lane) == (span.worker, span.lane)
                    && !last.failed
                    && !span.failed
                    && last.measuring == span.measuring =>
            {
                last.end = last.end.max(span.end);
                last.items += span.items;
                last.tiles += span.tiles;
                open = false;
            }
            _ => {
                out.push(span);
                open = true;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_kept_by_worker_and_lane_and_merged_past_the_bound() {
        let timeline = Timeline::default();
        let t = Instant::now();
        timeline.measuring(true);
        timeline.tile("gpu:x", 0, t, 10, false);
        timeline.measuring(false);
        timeline.tile("remote:h:y", 2, t, 20, true);
        for _ in 0..(KEPT + 10) {
            timeline.tile("cpu", 0, Instant::now(), 1, false);
        }
        let (names, spans, merged) = timeline.spans(usize::MAX);
        assert_eq!(names, ["gpu:x", "remote:h:y", "cpu"]);
        assert!(merged && spans.len() < KEPT, "{} spans", spans.len());
        let items: u64 = spans.iter().map(|s| s.items).sum();
        let tiles: u32 = spans.iter().map(|s| s.tiles).sum();
        assert_eq!((items, tiles as usize), (30 + KEPT as u64 + 10, KEPT + 12), "nothing lost in merging");
        assert!(spans.iter().any(|s| s.worker == 0 && s.measuring && s.items == 10));
        assert!(spans.iter().any(|s| s.worker == 1 && s.lane == 2 && s.failed), "the failed tile is kept whole");
        let (_, few, _) = timeline.spans(100);
        assert!(few.len() <= 100 && few.windows(2).all(|w| w[0].start <= w[1].start));
        assert_eq!(few.iter().map(|s| s.items).sum::<u64>(), items);
    }
}
