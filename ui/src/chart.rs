//! Throughput over time as a small SVG chart: the daemon's page draws its own items per second,
//! xcmon draws each daemon's from the counters it reads.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use askama::Template;

/// Width and height of the chart's drawing, in SVG units.
const WIDTH: f64 = 300.0;
const HEIGHT: f64 = 60.0;

/// A chart of items per second, oldest on the left.
#[derive(Debug, Clone, PartialEq, Template)]
#[template(path = "chart.html")]
pub struct Chart {
    /// What the chart covers: `items/s, last 5 min`.
    pub caption: String,
    /// The line's points (`x,y x,y …`); empty when there is nothing to draw.
    pub line: String,
    /// The filled area under the line.
    pub area: String,
    /// The highest rate shown, e.g. `2.10 M items/s`.
    pub peak: String,
    /// The latest rate.
    pub latest: String,
}

impl Chart {
    /// The chart of `rates` (items per second, oldest first), one every `step`.
    pub fn of(rates: &[f64], step: Duration) -> Chart {
        let span = step.as_secs_f64() * rates.len() as f64;
        let caption = if rates.len() < 2 {
            "items/s".to_owned()
        } else if span >= 120.0 {
            format!("items/s, last {:.0} min", span / 60.0)
        } else {
            format!("items/s, last {span:.0} s")
        };
        let peak = rates.iter().copied().filter(|r| r.is_finite()).fold(0.0_f64, f64::max);
        let latest = rates.last().copied().unwrap_or(0.0);
        if rates.len() < 2 {
            return Chart { caption, line: String::new(), area: String::new(), peak: rate(0.0), latest: rate(latest) };
        }
        let scale = if peak > 0.0 { (HEIGHT - 4.0) / peak } else { 0.0 };
        let last = (rates.len() - 1) as f64;
        let points: Vec<String> = rates
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let r = if r.is_finite() { r.max(0.0) } else { 0.0 };
                format!("{:.1},{:.1}", i as f64 / last * WIDTH, HEIGHT - r * scale)
            })
            .collect();
        let line = points.join(" ");
        let area = format!("0,{HEIGHT} {line} {WIDTH},{HEIGHT}");
        Chart { caption, line, area, peak: rate(peak), latest: rate(latest) }
    }
}

/// `1.23 M items/s`.
pub fn rate(per_second: f64) -> String {
    let (value, unit) = match per_second {
        r if r >= 1e9 => (r / 1e9, "G "),
        r if r >= 1e6 => (r / 1e6, "M "),
        r if r >= 1e3 => (r / 1e3, "k "),
        r => (r, ""),
    };
    format!("{value:.2} {unit}items/s")
}

/// A running total read now and then (a daemon's items done), kept for a while, turned into
/// rates per step for a [`Chart`].
#[derive(Debug, Clone)]
pub struct Samples {
    keep: Duration,
    readings: VecDeque<(Instant, u64)>,
}

impl Samples {
    /// Keeps readings of the last `keep`.
    pub fn new(keep: Duration) -> Samples {
        Samples { keep, readings: VecDeque::new() }
    }

    /// Adds a reading of the total at `at`. A total that went down (the daemon restarted)
    /// starts the series again.
    pub fn add(&mut self, at: Instant, total: u64) {
        if self.readings.back().is_some_and(|&(_, last)| total < last) {
            self.readings.clear();
        }
        self.readings.push_back((at, total));
        while self.readings.front().is_some_and(|&(t, _)| at.duration_since(t) > self.keep) {
            self.readings.pop_front();
        }
    }

    /// The rate between each reading and the one before, oldest first.
    pub fn rates(&self) -> Vec<f64> {
        self.readings
            .iter()
            .zip(self.readings.iter().skip(1))
            .map(|(&(t0, n0), &(t1, n1))| {
                let secs = t1.duration_since(t0).as_secs_f64();
                if secs > 0.0 { (n1 - n0) as f64 / secs } else { 0.0 }
            })
            .collect()
    }

    /// The chart of these readings, taken about every `step`.
    pub fn chart(&self, step: Duration) -> Chart {
        Chart::of(&self.rates(), step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_scales_to_its_peak() {
        let chart = Chart::of(&[0.0, 1e6, 2e6, 1e6], Duration::from_secs(2));
        assert_eq!(chart.caption, "items/s, last 8 s");
        assert_eq!(chart.peak, "2.00 M items/s");
        assert_eq!(chart.latest, "1.00 M items/s");
        assert_eq!(chart.line, "0.0,60.0 100.0,32.0 200.0,4.0 300.0,32.0");
        let html = chart.render().expect("renders");
        assert!(html.contains("<polyline") && html.contains("2.00 M items/s"), "{html}");
        let idle = Chart::of(&[0.0; 150], Duration::from_secs(2));
        assert_eq!((idle.caption.as_str(), idle.peak.as_str()), ("items/s, last 5 min", "0.00 items/s"));
        assert!(idle.line.starts_with("0.0,60.0 "), "a flat line at the bottom: {}", idle.line);
        let nothing = Chart::of(&[5.0], Duration::from_secs(2)).render().expect("renders");
        assert!(nothing.contains("items/s: no figures yet"), "{nothing}");
    }

    #[test]
    fn samples_become_rates_and_forget_old_ones() {
        let t = Instant::now();
        let mut samples = Samples::new(Duration::from_secs(10));
        for (i, total) in [0u64, 100, 300, 300].into_iter().enumerate() {
            samples.add(t + Duration::from_secs(2 * i as u64), total);
        }
        assert_eq!(samples.rates(), [50.0, 100.0, 0.0]);
        samples.add(t + Duration::from_secs(13), 400);
        assert_eq!(samples.rates(), [0.0, 100.0 / 7.0], "readings older than 10 s are gone");
        samples.add(t + Duration::from_secs(15), 10);
        assert!(samples.rates().is_empty(), "a restarted daemon starts a new series");
    }
}
