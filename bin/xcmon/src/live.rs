//! Live figures, where xcmon has the daemons' secret (`XC_PAR_SECRET`): every 2 s it reads each
//! daemon it found by multicast DNS (`/v1/capacity` and `/v1/devices`, over the same pinned TLS a
//! program uses, pins in `~/.xcc`), and keeps over the last 5 minutes its items done (the
//! throughput chart), each device's tiles in flight (a chart per device) and its refusals by code.
//! Without the secret it reads nothing: a daemon would refuse each reading.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xcd_discovery::FoundDaemon;
use xcd_runtime::home::Home;
use xcd_runtime::remote::reader::Reader;
use xcd_ui::LiveView;
use xcd_ui::chart::{Chart, Samples, Unit};
use xcd_ui::daemon::memory;

/// Time between readings.
pub(crate) const EVERY: Duration = Duration::from_secs(2);
/// How much throughput history is kept.
const KEEP: Duration = Duration::from_secs(300);

/// What is known of one daemon from reading it.
struct Live {
    samples: Samples,
    /// Each device's microseconds of tiles in flight (a running total), by device id, in the
    /// daemon's order: read twice, the mean tiles in flight between the readings.
    in_flight_by_device: Vec<(String, Samples)>,
    /// Its refusal counts by code at each reading of the last 5 minutes, oldest first.
    refusals: VecDeque<(Instant, BTreeMap<String, u64>)>,
    /// None until a reading has succeeded: a first reading that fails shows no figure.
    in_flight: Option<u64>,
    memory: Vec<String>,
    error: Option<String>,
}

impl Live {
    /// A daemon not read yet.
    fn new() -> Live {
        Live {
            samples: Samples::new(KEEP),
            in_flight_by_device: Vec::new(),
            refusals: VecDeque::new(),
            in_flight: None,
            memory: Vec::new(),
            error: None,
        }
    }

    /// Keeps one reading of each device's seconds of tiles in flight and of the refusal counts.
    fn read(&mut self, now: Instant, devices: &[String], in_flight: &[f64], refusals: BTreeMap<String, u64>) {
        // A daemon older than the per-device figures has no charts of them; one whose devices
        // changed (it restarted with others) starts its charts again.
        if in_flight.len() != devices.len() {
            self.in_flight_by_device.clear();
        } else if self.in_flight_by_device.iter().map(|(d, _)| d).ne(devices.iter()) {
            self.in_flight_by_device = devices.iter().map(|d| (d.clone(), Samples::new(KEEP))).collect();
        }
        for ((_, micros), seconds) in self.in_flight_by_device.iter_mut().zip(in_flight) {
            micros.add(now, (seconds.max(0.0) * 1e6) as u64);
        }
        self.refusals.push_back((now, refusals));
        while self.refusals.front().is_some_and(|(t, _)| now.duration_since(*t) > KEEP) {
            self.refusals.pop_front();
        }
    }

    /// Refusals since the oldest reading kept, by code: `busy 3` (the counts since a restart
    /// where the daemon restarted in between).
    fn recent_refusals(&self) -> Vec<String> {
        let (Some((_, first)), Some((_, last))) = (self.refusals.front(), self.refusals.back()) else {
            return Vec::new();
        };
        let restarted = last.iter().any(|(code, n)| first.get(code).is_some_and(|was| n < was));
        last.iter()
            .map(|(code, n)| (code, if restarted { *n } else { n - first.get(code).copied().unwrap_or(0) }))
            .filter(|(_, n)| *n > 0)
            .map(|(code, n)| format!("{code} {n}"))
            .collect()
    }
}

/// The live figures of every daemon read, by advertisement name.
#[derive(Clone, Default)]
pub(crate) struct Figures(Arc<Mutex<BTreeMap<String, Live>>>);

impl Figures {
    /// The views of every daemon read so far.
    pub(crate) fn views(&self) -> BTreeMap<String, LiveView> {
        let figures = self.0.lock();
        figures
            .iter()
            .map(|(name, live)| {
                let view = LiveView {
                    in_flight: live.in_flight,
                    memory: live.memory.clone(),
                    chart: live.samples.chart(EVERY),
                    in_flight_charts: live
                        .in_flight_by_device
                        .iter()
                        .map(|(device, micros)| {
                            let mean: Vec<f64> = micros.rates().iter().map(|r| r / 1e6).collect();
                            (device.clone(), Chart::of_unit(&mean, EVERY, Unit::TilesInFlight))
                        })
                        .collect(),
                    refusals: live.recent_refusals(),
                    error: live.error.clone(),
                };
                (name.clone(), view)
            })
            .collect()
    }
}

/// Reads the daemons in `found` every [`EVERY`], forever; calls `changed` after each round.
pub(crate) async fn read(
    found: Arc<Mutex<BTreeMap<String, FoundDaemon>>>,
    figures: Figures,
    secret: String,
    home: Home,
    changed: impl Fn(),
) {
    let mut readers: HashMap<String, (SocketAddr, Arc<Reader>)> = HashMap::new();
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tick.tick().await;
        let daemons: Vec<FoundDaemon> = found.lock().values().cloned().collect();
        readers.retain(|name, _| daemons.iter().any(|d| &d.name == name));
        figures.0.lock().retain(|name, _| daemons.iter().any(|d| &d.name == name));
        if daemons.is_empty() {
            continue;
        }
        let rounds = daemons.iter().map(|daemon| {
            let cached = readers.get(&daemon.name).cloned();
            let (secret, home) = (secret.clone(), home.clone());
            async move {
                let Some(ip) = daemon.addrs.first().map(|ip| SocketAddr::new(*ip, daemon.port)) else {
                    return (daemon.name.clone(), None, Err("advertised without an address".to_owned()));
                };
                let reader = match cached {
                    Some((at, reader)) if at == ip => reader,
                    _ => match Reader::open(&daemon.addr(), ip, &home, Some(&secret)).await {
                        Ok(reader) => Arc::new(reader),
                        Err(e) => return (daemon.name.clone(), None, Err(e.to_string())),
                    },
                };
                let reading = tokio::try_join!(reader.capacity(), reader.devices()).map_err(|e| e.to_string());
                (daemon.name.clone(), Some((ip, reader)), reading)
            }
        });
        let results = futures_util::future::join_all(rounds).await;
        let now = Instant::now();
        let mut figures = figures.0.lock();
        for (name, reader, reading) in results {
            // A failed reading drops the connection: the next round connects afresh.
            match (reader, reading.is_ok()) {
                (Some(reader), true) => readers.insert(name.clone(), reader),
                _ => readers.remove(&name),
            };
            let live = figures.entry(name).or_insert_with(Live::new);
            match reading {
                Ok((capacity, devices)) => {
                    live.samples.add(now, capacity.items_done);
                    live.in_flight = Some(capacity.tiles_in_flight);
                    let ids: Vec<String> = devices.iter().map(|d| d.id.clone()).collect();
                    live.read(now, &ids, &capacity.tile_seconds_by_device, capacity.refusals);
                    live.memory = devices
                        .iter()
                        .map(|d| format!("{}: {}", d.id, memory(d.memory_free, d.memory_total)))
                        .collect();
                    live.error = None;
                }
                // A daemon that cannot be read keeps its last figures, with why beside them.
                Err(e) => live.error = Some(e),
            }
        }
        drop(figures);
        changed();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
        pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect()
    }

    #[test]
    fn refusals_are_those_of_the_last_minutes_and_charts_follow_the_devices() {
        let (t, devices) = (Instant::now(), ["cuda:a".to_owned(), "cuda:b".to_owned()]);
        let mut live = Live::new();
        live.read(t, &devices, &[1.0, 0.0], counts(&[("busy", 5)]));
        live.read(t + Duration::from_secs(2), &devices, &[7.0, 0.5], counts(&[("busy", 7), ("unknown_block", 1)]));
        assert_eq!(live.recent_refusals(), ["busy 2", "unknown_block 1"]);
        let charts: Vec<&str> = live.in_flight_by_device.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(charts, ["cuda:a", "cuda:b"]);
        // 6 s of tiles in 2 s: three tiles in flight on average.
        assert_eq!(live.in_flight_by_device[0].1.rates(), [3.0e6]);
        // Five minutes on, the old readings are gone: nothing refused since.
        live.read(t + Duration::from_secs(400), &devices, &[7.0, 0.5], counts(&[("busy", 7), ("unknown_block", 1)]));
        assert!(live.recent_refusals().is_empty());
        // Restarted, with its counts from zero again; and an older daemon, with no per-device figures.
        live.read(t + Duration::from_secs(402), &devices[..1], &[0.0], counts(&[("busy", 1)]));
        assert_eq!(live.recent_refusals(), ["busy 1"]);
        assert_eq!(live.in_flight_by_device.len(), 1);
        live.read(t + Duration::from_secs(404), &devices[..1], &[], BTreeMap::new());
        assert!(live.in_flight_by_device.is_empty());
    }
}
