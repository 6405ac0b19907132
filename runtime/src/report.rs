//! What a run did, and the `par:` lines `XC_PAR_REPORT=1` prints.

use std::time::Duration;

use crate::schedule::WorkerStats;

/// What one run of a block did.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Block name.
    pub block: String,
    /// Items in the run.
    pub items: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Each worker's share, failures included.
    pub workers: Vec<WorkerStats>,
}

impl RunReport {
    /// Tiles computed, by every worker together.
    pub fn tiles(&self) -> u64 {
        self.workers.iter().map(|w| w.tiles).sum()
    }

    /// The report's lines: the run, then one line per worker that failed.
    pub fn lines(&self) -> Vec<String> {
        let shares: Vec<String> = self
            .workers
            .iter()
            .filter(|w| w.tiles > 0)
            .map(|w| {
                let rate = w.items as f64 / self.elapsed.as_secs_f64().max(1e-9) / 1e6;
                format!("{} ({} items, {} tiles, {rate:.2} M items/s)", w.name, w.items, w.tiles)
            })
            .collect();
        let mut lines = vec![format!(
            "par: {}: {} items in {} tiles across {} in {:.3} s",
            self.block,
            self.items,
            self.tiles(),
            if shares.is_empty() { "no worker".to_owned() } else { shares.join(", ") },
            self.elapsed.as_secs_f64()
        )];
        for w in &self.workers {
            if let Some(failure) = &w.failure {
                lines.push(format!(
                    "par: {}: {} stopped ({failure}); its tiles ran on the other workers",
                    self.block, w.name
                ));
            }
        }
        lines
    }
}
