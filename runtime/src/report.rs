//! What a run did, and the `par:` lines `XC_PAR_REPORT=1` prints: a line per worker that ran
//! tiles (what it is, its share and rate), the placement decision, the run's line named by the
//! caller's source line, and a line per worker that stopped.

use std::time::Duration;

use crate::placement::Choice;
use crate::schedule::WorkerStats;

/// What one run of a block did.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The block, by the name its description gives.
    pub block: String,
    /// Where the program ran it: `file:line`.
    pub source: String,
    /// Items in the run.
    pub items: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Each worker's share, failures included.
    pub workers: Vec<WorkerStats>,
    /// How the workers were chosen, where `XC_PAR=auto` left a choice.
    pub placement: Option<Choice>,
}

impl RunReport {
    /// Tiles computed, by every worker together.
    pub fn tiles(&self) -> u64 {
        self.workers.iter().map(|w| w.tiles).sum()
    }

    /// The report's lines.
    pub fn lines(&self) -> Vec<String> {
        let ran: Vec<&WorkerStats> = self.workers.iter().filter(|w| w.tiles > 0).collect();
        let mut lines: Vec<String> = ran
            .iter()
            .map(|w| {
                let rate = w.throughput().unwrap_or_default() / 1e6;
                format!("par: {}: {} items in {} tiles, {rate:.2} M items/s", w.about, w.items, w.tiles)
            })
            .collect();
        if let Some(choice) = &self.placement {
            lines.push(choice.line(&self.block, self.items));
        }
        let names: Vec<&str> = ran.iter().map(|w| w.name.as_str()).collect();
        let shares: Vec<String> = ran
            .iter()
            .map(|w| format!("{} {:.0}%", w.name, 100.0 * w.items as f64 / self.items.max(1) as f64))
            .collect();
        lines.push(format!(
            "par: {}: {} items in {} tiles across {} ({:.3} s, {})",
            self.source,
            self.items,
            self.tiles(),
            if names.is_empty() { "no worker".to_owned() } else { names.join(", ") },
            self.elapsed.as_secs_f64(),
            if shares.is_empty() { "nothing to do".to_owned() } else { shares.join(", ") },
        ));
        for w in &self.workers {
            if let Some(note) = &w.note {
                lines.push(format!("par: {}: {}: {note}", self.source, w.name));
            }
            if let Some(failure) = &w.failure {
                lines.push(format!(
                    "par: {}: {} stopped ({failure}); its tiles ran on the other workers",
                    self.source, w.name
                ));
            }
        }
        lines
    }
}
