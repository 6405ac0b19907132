//! Throughput over time as a small SVG chart with labelled axes, the one chart component of both
//! pages: the daemon's page draws its own items per second, xcmon draws each daemon's from the
//! counters it reads.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use askama::Template;

/// The chart's drawing, in SVG units: the plot, with room on the left for the value axis's
/// labels and below for the time axis's.
const WIDTH: f64 = 360.0;
const HEIGHT: f64 = 120.0;
const LEFT: f64 = 54.0;
const RIGHT: f64 = 8.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 20.0;

/// What a chart's values are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A rate: items per second.
    ItemsPerSecond,
    /// A count at each moment: tiles running or queued.
    TilesInFlight,
}

impl Unit {
    /// The unit as the axis names it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::ItemsPerSecond => "items/s",
            Unit::TilesInFlight => "tiles in flight",
        }
    }

    /// A value with its unit, for the labels: `1.23 M items/s`, `3 tiles`.
    pub fn figure(self, value: f64) -> String {
        match self {
            Unit::ItemsPerSecond => rate(value),
            Unit::TilesInFlight if value > 0.0 && value < 0.05 => format!("{} tiles", fraction(value)),
            Unit::TilesInFlight if (value - 1.0).abs() < 0.05 => "1 tile".to_owned(),
            Unit::TilesInFlight if (value - value.round()).abs() < 0.05 => format!("{value:.0} tiles"),
            Unit::TilesInFlight => format!("{value:.1} tiles"),
        }
    }
}

/// A label on an axis, at a position along it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// Where, in SVG units (y for the value axis, x for the time axis).
    pub at: f64,
    /// What it says, e.g. `2 M` or `−5 min`.
    pub label: String,
}

/// A chart of items per second, oldest on the left: a value axis in items/s from 0 to a round
/// figure at or above the peak, a time axis ending at now, the peak marked by a dashed line and
/// the latest figure by a dot, each labelled with its value. Plain SVG: no script, nothing
/// loaded from elsewhere.
#[derive(Debug, Clone, PartialEq, Template)]
#[template(path = "chart.html")]
pub struct Chart {
    /// The values' unit, as the value axis names it.
    pub unit: &'static str,
    /// What the chart covers: `items/s, last 5 min`.
    pub caption: String,
    /// The line's points (`x,y x,y …`); empty when there is nothing to draw.
    pub line: String,
    /// The filled area under the line.
    pub area: String,
    /// The highest value shown, e.g. `2.10 M items/s`.
    pub peak: String,
    /// The latest value.
    pub latest: String,
    /// The value axis's labels, 0 at the bottom.
    pub values: Vec<Tick>,
    /// The time axis's labels, oldest first.
    pub times: Vec<Tick>,
    /// Where the peak's dashed line is (y).
    pub peak_y: f64,
    /// Where the latest figure's dot is.
    pub latest_at: (f64, f64),
}

/// The plot's corners, for the template.
impl Chart {
    /// The plot's left edge.
    pub fn left(&self) -> f64 {
        LEFT
    }
    /// The plot's right edge.
    pub fn right(&self) -> f64 {
        WIDTH - RIGHT
    }
    /// The plot's top edge.
    pub fn top(&self) -> f64 {
        TOP
    }
    /// The plot's bottom edge (the value 0).
    pub fn bottom(&self) -> f64 {
        HEIGHT - BOTTOM
    }
    /// Where the peak's label goes: above its line, unless that leaves the drawing.
    pub fn peak_label_y(&self) -> f64 {
        if self.peak_y - 3.0 < TOP { self.peak_y + 10.0 } else { self.peak_y - 3.0 }
    }
    /// Where the latest figure's label goes: above its dot, or below it when the dot is near the
    /// top (where the peak's label is).
    pub fn latest_label_y(&self) -> f64 {
        if self.latest_at.1 - 6.0 < TOP + 10.0 { self.latest_at.1 + 13.0 } else { self.latest_at.1 - 6.0 }
    }
}

impl Chart {
    /// The chart of `rates` (items per second, oldest first), one every `step`.
    pub fn of(rates: &[f64], step: Duration) -> Chart {
        Chart::of_unit(rates, step, Unit::ItemsPerSecond)
    }

    /// The chart of `values` in `unit` (oldest first), one every `step`.
    pub fn of_unit(rates: &[f64], step: Duration, unit: Unit) -> Chart {
        let span = step.as_secs_f64() * rates.len() as f64;
        let caption =
            if rates.len() < 2 { unit.name().to_owned() } else { format!("{}, last {}", unit.name(), duration(span)) };
        let clean = |r: f64| if r.is_finite() { r.max(0.0) } else { 0.0 };
        let peak = rates.iter().copied().map(clean).fold(0.0_f64, f64::max);
        let latest = rates.last().copied().map(clean).unwrap_or(0.0);
        let mut chart = Chart {
            unit: unit.name(),
            caption,
            line: String::new(),
            area: String::new(),
            peak: unit.figure(peak),
            latest: unit.figure(latest),
            values: Vec::new(),
            times: Vec::new(),
            peak_y: HEIGHT - BOTTOM,
            latest_at: (WIDTH - RIGHT, HEIGHT - BOTTOM),
        };
        if rates.len() < 2 {
            chart.peak = unit.figure(0.0);
            return chart;
        }
        let top = round_up(peak);
        let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let y = |r: f64| HEIGHT - BOTTOM - r / top * plot_h;
        let last = (rates.len() - 1) as f64;
        let x = |i: usize| LEFT + i as f64 / last * plot_w;
        let points: Vec<String> =
            rates.iter().enumerate().map(|(i, r)| format!("{:.1},{:.1}", x(i), y(clean(*r)))).collect();
        chart.line = points.join(" ");
        chart.area =
            format!("{LEFT:.1},{:.1} {} {:.1},{:.1}", HEIGHT - BOTTOM, chart.line, WIDTH - RIGHT, HEIGHT - BOTTOM);
        chart.values = [0.0, 0.5, 1.0].iter().map(|f| Tick { at: y(top * f), label: amount(top * f) }).collect();
        chart.times =
            [(0.0, format!("−{}", duration(span))), (0.5, format!("−{}", duration(span / 2.0))), (1.0, "now".into())]
                .into_iter()
                .map(|(f, label)| Tick { at: LEFT + f * plot_w, label })
                .collect();
        chart.peak_y = y(peak);
        chart.latest_at = (x(rates.len() - 1), y(latest));
        chart
    }
}

/// The smallest of 1, 2 and 5 times a power of ten at or above `value` (1 for nothing).
fn round_up(value: f64) -> f64 {
    if value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * power).find(|&v| v >= value * (1.0 - 1e-9)).unwrap_or(10.0 * power)
}

/// An axis figure with its multiplier: `0`, `500`, `2.5 k`, `10 M`.
fn amount(value: f64) -> String {
    let (v, unit) = match value {
        v if v >= 1e9 => (v / 1e9, " G"),
        v if v >= 1e6 => (v / 1e6, " M"),
        v if v >= 1e3 => (v / 1e3, " k"),
        v if v > 0.0 && v < 1.0 => return fraction(v),
        v => (v, ""),
    };
    let digits = if (v - v.round()).abs() < 1e-9 { 0 } else { 1 };
    format!("{v:.digits$}{unit}")
}

/// A figure under 1 with its first two significant digits, trailing zeros dropped: `0.025`,
/// `0.05`, `0.0031`. A short run's mean tiles in flight over a reading's 2 s is such a figure.
fn fraction(value: f64) -> String {
    let decimals = (1.0 - value.log10().floor()).clamp(1.0, 12.0) as usize;
    let text = format!("{value:.decimals$}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A span of time for an axis: `40 s`, `5 min`, `2.5 min`, `1 h`.
fn duration(seconds: f64) -> String {
    let trim = |v: f64| if (v - v.round()).abs() < 0.05 { format!("{v:.0}") } else { format!("{v:.1}") };
    if seconds >= 3600.0 {
        format!("{} h", trim(seconds / 3600.0))
    } else if seconds >= 120.0 {
        format!("{} min", trim(seconds / 60.0))
    } else {
        format!("{} s", trim(seconds))
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
    fn the_chart_has_axes_with_units_and_marks_its_peak_and_latest_figure() {
        let chart = Chart::of(&[0.0, 1e6, 2e6, 1e6], Duration::from_secs(2));
        assert_eq!(chart.caption, "items/s, last 8 s");
        assert_eq!(chart.peak, "2.00 M items/s");
        assert_eq!(chart.latest, "1.00 M items/s");
        // The plot runs from x 54 to 352 and from y 100 (0) to 16 (the axis's top, 2 M).
        assert_eq!(chart.line, "54.0,100.0 153.3,58.0 252.7,16.0 352.0,58.0");
        let labels: Vec<&str> = chart.values.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(labels, ["0", "1 M", "2 M"]);
        let times: Vec<&str> = chart.times.iter().map(|t| t.label.as_str()).collect();
        assert_eq!(times, ["−8 s", "−4 s", "now"]);
        assert_eq!((chart.peak_y, chart.latest_at), (16.0, (352.0, 58.0)));
        let html = chart.render().expect("renders");
        for part in ["<polyline", "items/s", "peak 2.00 M items/s", "now 1.00 M items/s", "−8 s", "2 M", "<circle"] {
            assert!(html.contains(part), "{part} in {html}");
        }
        let idle = Chart::of(&[0.0; 150], Duration::from_secs(2));
        assert_eq!((idle.caption.as_str(), idle.peak.as_str()), ("items/s, last 5 min", "0.00 items/s"));
        assert!(idle.line.starts_with("54.0,100.0 "), "a flat line at the bottom: {}", idle.line);
        assert_eq!(idle.values.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["0", "0.5", "1"]);
        assert_eq!(idle.times[1].label, "−2.5 min");
        let nothing = Chart::of(&[5.0], Duration::from_secs(2)).render().expect("renders");
        assert!(nothing.contains("items/s: no figures yet"), "{nothing}");
    }

    #[test]
    fn a_chart_of_tiles_in_flight_says_so() {
        let chart = Chart::of_unit(&[0.0, 2.0, 3.0, 1.0], Duration::from_secs(2), Unit::TilesInFlight);
        assert_eq!(
            (chart.caption.as_str(), chart.peak.as_str(), chart.latest.as_str()),
            ("tiles in flight, last 8 s", "3 tiles", "1 tile")
        );
        assert_eq!(chart.values.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["0", "2.5", "5"]);
        let html = chart.render().expect("renders");
        assert!(html.contains(">tiles in flight</text>") && html.contains("peak 3 tiles"), "{html}");
        // A short run, 60 ms of tiles between two readings 2 s apart, is not shown as none.
        let short = Chart::of_unit(&[0.0, 0.03, 0.0], Duration::from_secs(2), Unit::TilesInFlight);
        assert_eq!((short.peak.as_str(), short.latest.as_str()), ("0.03 tiles", "0 tiles"));
        assert_eq!(short.values.iter().map(|t| t.label.as_str()).collect::<Vec<_>>(), ["0", "0.025", "0.05"]);
    }

    #[test]
    fn axis_figures_are_round() {
        assert_eq!([0.0, 0.3, 1.0, 1.2, 2.1, 4.9, 7.0, 2.3e6].map(round_up), [1.0, 0.5, 1.0, 2.0, 5.0, 5.0, 10.0, 5e6]);
        assert_eq!([0.0, 250.0, 2500.0, 1e7, 2.5e9].map(amount), ["0", "250", "2.5 k", "10 M", "2.5 G"]);
        assert_eq!([0.025, 0.05, 0.5, 0.0031].map(amount), ["0.025", "0.05", "0.5", "0.0031"]);
        assert_eq!([40.0, 300.0, 150.0, 5400.0].map(duration), ["40 s", "5 min", "2.5 min", "1.5 h"]);
        let bad = Chart::of(&[f64::NAN, f64::INFINITY, -3.0], Duration::from_secs(2));
        assert_eq!(bad.peak, "0.00 items/s", "figures that are not rates count as none");
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
