//! Trace records: what a program sends its monitor (`XC_PAR_TRACE=host:port`, xcmon's port 7482)
//! about each run of a block.
//!
//! One record per run, as one line of JSON ending in `\n`, on a TCP connection the program keeps
//! open. A line longer than [`MAX_LINE`] is not a record; a reader drops it. Fields may be added
//! in later versions (readers ignore unknown ones); `version` says which xcc sent it.

use serde::{Deserialize, Serialize};

/// The longest line a record may take, newline included.
pub const MAX_LINE: usize = 64 * 1024;
/// The port xcmon takes trace records on.
pub const TRACE_PORT: u16 = 7482;
/// Workers one record may list.
pub const MAX_WORKERS: usize = 256;

/// One run of a block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceRun {
    /// The xcc version of the program.
    pub version: String,
    /// The program's executable name.
    pub program: String,
    /// Its process id.
    pub pid: u32,
    /// Where the program ran the block: `file:line`.
    pub source: String,
    /// The block's name.
    pub block: String,
    /// Items in the run.
    pub items: u64,
    /// Tiles, every worker together.
    pub tiles: u64,
    /// When the run started, in milliseconds since the Unix epoch.
    pub started_ms: u64,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
    /// How the workers were chosen, in the report's words, where a choice was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// Each worker's share.
    pub workers: Vec<TraceWorker>,
    /// The run's timeline: each tile (or adjacent tiles of one lane, merged), in start order.
    /// Empty from a program older than this field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<TraceSpan>,
    /// Whether adjacent tiles were merged into spans to keep the record under [`MAX_LINE`].
    #[serde(default, skip_serializing_if = "is_false")]
    pub merged: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// When one tile ran (or several adjacent tiles of one lane, merged), on which worker and lane.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceSpan {
    /// The worker: an index into [`TraceRun::workers`].
    pub worker: u16,
    /// Which of the worker's lanes (tiles it keeps in flight at once), from 0.
    pub lane: u16,
    /// When it started, in microseconds from the run's start.
    pub start_us: u64,
    /// When it ended, likewise.
    pub end_us: u64,
    /// Items in it.
    pub items: u64,
    /// Tiles in it: more than one where adjacent tiles were merged.
    pub tiles: u32,
    /// The tile failed, and ran again on another worker.
    #[serde(default, skip_serializing_if = "is_false")]
    pub failed: bool,
    /// It ran while placement measured which workers to use.
    #[serde(default, skip_serializing_if = "is_false")]
    pub measuring: bool,
}

/// What kind of worker ran a share of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WorkerKind {
    /// The block's CPU form on this machine's cores.
    #[default]
    Cpu,
    /// A device of this machine, through the engine.
    Gpu,
    /// A device of a daemon.
    Remote,
}

impl WorkerKind {
    /// The word settings and reports use: `cpu`, `gpu`, `remote`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerKind::Cpu => "cpu",
            WorkerKind::Gpu => "gpu",
            WorkerKind::Remote => "remote",
        }
    }
}

impl std::fmt::Display for WorkerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One worker's share of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceWorker {
    /// Its kind.
    pub kind: WorkerKind,
    /// Its report name: `cpu`, `gpu:…`, `remote:<host>:<device>`.
    pub name: String,
    /// Items it computed.
    pub items: u64,
    /// Tiles it computed.
    pub tiles: u64,
    /// Seconds its lanes spent on tiles, added up.
    pub busy_seconds: f64,
    /// Why it stopped, if it did (its tiles ran on the others): a fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// Why a line is not a trace record.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Longer than [`MAX_LINE`].
    #[error("a trace line of {0} bytes is longer than the limit of {MAX_LINE}")]
    TooLong(usize),
    /// Not the record's JSON.
    #[error("not a trace record: {0}")]
    Json(#[from] serde_json::Error),
    /// Well-formed but out of bounds.
    #[error("a trace record with {0} workers is more than the limit of {MAX_WORKERS}")]
    TooManyWorkers(usize),
}

impl TraceRun {
    /// The record's line, newline included.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).unwrap_or_default();
        line.push(b'\n');
        line
    }

    /// Reads one line (with or without its newline), checking the bounds.
    pub fn from_line(line: &[u8]) -> Result<TraceRun, TraceError> {
        if line.len() > MAX_LINE {
            return Err(TraceError::TooLong(line.len()));
        }
        let run: TraceRun = serde_json::from_slice(line)?;
        if run.workers.len() > MAX_WORKERS {
            return Err(TraceError::TooManyWorkers(run.workers.len()));
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> TraceRun {
        TraceRun {
            version: crate::VERSION.into(),
            program: "escape".into(),
            pid: 7,
            source: "main.rs:12".into(),
            block: "escape".into(),
            items: 100,
            tiles: 3,
            started_ms: 1,
            seconds: 0.5,
            placement: None,
            workers: vec![TraceWorker {
                kind: WorkerKind::Cpu,
                name: "cpu".into(),
                items: 100,
                tiles: 3,
                busy_seconds: 0.4,
                failure: Some("x".into()),
            }],
            spans: vec![TraceSpan {
                worker: 0,
                lane: 1,
                start_us: 10,
                end_us: 400,
                items: 100,
                tiles: 3,
                failed: false,
                measuring: true,
            }],
            merged: true,
        }
    }

    #[test]
    fn a_record_is_one_line_and_reads_back() {
        let line = run().to_line();
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(TraceRun::from_line(&line).expect("reads"), run());
        // A record from a program older than the timeline reads too, with none.
        let text = String::from_utf8(line).expect("utf-8");
        let at = text.find(",\"spans\"").expect("spans in the line");
        let old = format!("{}}}", &text[..at]);
        let read = TraceRun::from_line(old.as_bytes()).expect("an older record reads");
        assert!(read.spans.is_empty() && !read.merged);
    }

    #[test]
    fn bad_lines_are_refused_with_a_reason() {
        assert!(matches!(TraceRun::from_line(b"{\"version\":1}"), Err(TraceError::Json(_))));
        assert!(matches!(TraceRun::from_line(&vec![b' '; MAX_LINE + 1]), Err(TraceError::TooLong(_))));
        let mut many = run();
        many.workers = vec![many.workers[0].clone(); MAX_WORKERS + 1];
        let line = serde_json::to_vec(&many).expect("json");
        assert!(matches!(TraceRun::from_line(&line), Err(TraceError::TooManyWorkers(_))));
    }
}
