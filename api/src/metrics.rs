//! The daemon's Prometheus metrics: tiles, bytes, tile latency, refusals by code, per device,
//! and the payload bytes its own code copies (one copy per byte is the design: issue 22).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Label of per-device series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeviceLabel {
    /// Device id, e.g. `vulkan:llvmpipe (…)`.
    pub device: String,
}

/// Label of refusals.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabel {
    /// The refusal's stable code.
    pub code: String,
}

type HistogramFamily = Family<DeviceLabel, Histogram, fn() -> Histogram>;

/// Every series the daemon exports, and the registry that renders them.
pub struct Metrics {
    registry: Registry,
    /// Tiles completed, per device.
    pub tiles: Family<DeviceLabel, Counter>,
    /// Tile input bytes received.
    pub bytes_in: Counter,
    /// Tile result bytes sent.
    pub bytes_out: Counter,
    /// Seconds from a tile's arrival to its result, per device.
    pub tile_seconds: HistogramFamily,
    /// Requests and tiles refused, per code.
    pub refusals: Family<CodeLabel, Counter>,
    /// Tiles running or queued now.
    pub in_flight: Gauge,
    /// Payload bytes the daemon's own code has copied ([`xcd_wire::copies`]), set when rendered.
    copied: Counter,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.000_25, 2.0, 18))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("xcd");
        let tiles = Family::<DeviceLabel, Counter>::default();
        let bytes_in = Counter::default();
        let bytes_out = Counter::default();
        let tile_seconds: HistogramFamily = Family::new_with_constructor(latency_histogram);
        let refusals = Family::<CodeLabel, Counter>::default();
        let in_flight = Gauge::default();
        let copied = Counter::default();
        registry.register("tiles", "Tiles completed", tiles.clone());
        registry.register("tile_input_bytes", "Tile input bytes received", bytes_in.clone());
        registry.register("tile_output_bytes", "Tile result bytes sent", bytes_out.clone());
        registry.register("tile_seconds", "Seconds from a tile's arrival to its result", tile_seconds.clone());
        registry.register("refusals", "Requests and tiles refused, by code", refusals.clone());
        registry.register("tiles_in_flight", "Tiles running or queued now", in_flight.clone());
        registry.register(
            "payload_bytes_copied",
            "Tile input and result bytes copied by the daemon's own code, outside TLS, HTTP/2 and the GPU API",
            copied.clone(),
        );
        Metrics { registry, tiles, bytes_in, bytes_out, tile_seconds, refusals, in_flight, copied }
    }
}

impl Metrics {
    /// Counts a refusal.
    pub fn refused(&self, code: &str) {
        self.refusals.get_or_create(&CodeLabel { code: code.to_owned() }).inc();
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        self.copied.inner().store(xcd_wire::copies::copied(), std::sync::atomic::Ordering::Relaxed);
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            tracing::error!("cannot render the metrics");
        }
        text
    }
}
