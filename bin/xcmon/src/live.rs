//! Live figures, where xcmon has the daemons' secret (`XC_PAR_SECRET`): every 2 s it reads each
//! daemon it found by multicast DNS (`/v1/capacity` and `/v1/devices`, over the same pinned TLS a
//! program uses, pins in `~/.xcc`), and keeps its items done over the last 5 minutes for the
//! throughput chart. Without the secret it reads nothing: a daemon would refuse each reading.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xcd_discovery::Found;
use xcd_runtime::home::Home;
use xcd_runtime::remote::reader::Reader;
use xcd_ui::LiveView;
use xcd_ui::chart::Samples;
use xcd_ui::daemon::memory;

/// Time between readings.
pub(crate) const EVERY: Duration = Duration::from_secs(2);
/// How much throughput history is kept.
const KEEP: Duration = Duration::from_secs(300);

/// What is known of one daemon from reading it.
struct Live {
    samples: Samples,
    /// None until a reading has succeeded: a first reading that fails shows no figure.
    in_flight: Option<u64>,
    memory: Vec<String>,
    error: Option<String>,
}

/// The live figures of every daemon read, by advertisement name.
#[derive(Clone, Default)]
pub(crate) struct Figures(Arc<Mutex<BTreeMap<String, Live>>>);

impl Figures {
    /// The views of every daemon read so far.
    pub(crate) fn views(&self) -> BTreeMap<String, LiveView> {
        let figures = self.0.lock().unwrap_or_else(|e| e.into_inner());
        figures
            .iter()
            .map(|(name, live)| {
                let view = LiveView {
                    in_flight: live.in_flight,
                    memory: live.memory.clone(),
                    chart: live.samples.chart(EVERY),
                    error: live.error.clone(),
                };
                (name.clone(), view)
            })
            .collect()
    }
}

/// Reads the daemons in `found` every [`EVERY`], forever; calls `changed` after each round.
pub(crate) async fn read(
    found: Arc<Mutex<BTreeMap<String, Found>>>,
    figures: Figures,
    secret: String,
    home: Home,
    changed: impl Fn(),
) {
    let mut readers: HashMap<String, (SocketAddr, Arc<Reader>)> = HashMap::new();
    let mut tick = tokio::time::interval(EVERY);
    loop {
        tick.tick().await;
        let daemons: Vec<Found> = found.lock().unwrap_or_else(|e| e.into_inner()).values().cloned().collect();
        readers.retain(|name, _| daemons.iter().any(|d| &d.name == name));
        figures.0.lock().unwrap_or_else(|e| e.into_inner()).retain(|name, _| daemons.iter().any(|d| &d.name == name));
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
        let mut figures = figures.0.lock().unwrap_or_else(|e| e.into_inner());
        for (name, reader, reading) in results {
            // A failed reading drops the connection: the next round connects afresh.
            match (reader, reading.is_ok()) {
                (Some(reader), true) => readers.insert(name.clone(), reader),
                _ => readers.remove(&name),
            };
            let live = figures.entry(name).or_insert_with(|| Live {
                samples: Samples::new(KEEP),
                in_flight: None,
                memory: Vec::new(),
                error: None,
            });
            match reading {
                Ok((capacity, devices)) => {
                    live.samples.add(now, capacity.items_done);
                    live.in_flight = Some(capacity.tiles_in_flight);
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
