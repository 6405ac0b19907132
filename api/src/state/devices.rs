//! The devices the daemon serves, and how many tiles each has in flight and has had: counted as a
//! tile starts and ends ([`super::InFlight`]). Running tiles is the engine's; this module must
//! not send a device anything.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use xcd_engine::DeviceHandle;

use crate::problem::ApiError;

/// The daemon's devices, in the order clients number them, and their tile counts.
pub(crate) struct DeviceSet {
    list: Vec<DeviceHandle>,
    in_flight: AtomicU64,
    /// Tiles in flight on each device, in `list` order.
    by_device: Vec<AtomicU64>,
    /// Microseconds each device has had tiles in flight, summed over its tiles, in `list`
    /// order: read twice, the mean number of tiles in flight between the readings.
    micros: Vec<AtomicU64>,
}

impl DeviceSet {
    /// `list`, with nothing in flight.
    pub(crate) fn new(list: Vec<DeviceHandle>) -> DeviceSet {
        let zeros = || list.iter().map(|_| AtomicU64::new(0)).collect();
        DeviceSet { by_device: zeros(), micros: zeros(), in_flight: AtomicU64::new(0), list }
    }

    /// Every device, in order.
    pub(crate) fn all(&self) -> &[DeviceHandle] {
        &self.list
    }

    /// The device a client names by index or id (the first without one), and its index.
    pub(crate) fn pick(&self, which: Option<&str>) -> Result<(usize, DeviceHandle), ApiError> {
        let index = match which {
            None => 0,
            Some(text) => match text.parse::<usize>() {
                Ok(i) => i,
                Err(_) => self
                    .list
                    .iter()
                    .position(|d| d.info().id == text)
                    .ok_or_else(|| ApiError::UnknownDevice(text.to_owned()))?,
            },
        };
        let device = self.list.get(index).ok_or_else(|| ApiError::UnknownDevice(index.to_string()))?;
        Ok((index, device.clone()))
    }

    /// A refusal when every device is out of service (and there is at least one).
    pub(crate) fn check_any_in_service(&self) -> Result<(), ApiError> {
        let lost: Vec<String> = self.list.iter().filter_map(|d| d.out_of_service()).collect();
        if !self.list.is_empty() && lost.len() == self.list.len() {
            return Err(ApiError::DeviceFailed(format!(
                "every device of this daemon is out of service ({}); it is trying to bring them back, and programs run their tiles elsewhere meanwhile",
                lost.join("; ")
            )));
        }
        Ok(())
    }

    /// Counts a tile on `device` as started; its index, if it is one of these.
    pub(super) fn start(&self, device: &DeviceHandle) -> Option<usize> {
        let index = self.list.iter().position(|d| d.info().id == device.info().id);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        if let Some(n) = index.and_then(|i| self.by_device.get(i)) {
            n.fetch_add(1, Ordering::SeqCst);
        }
        index
    }

    /// Counts a tile started at `since` on the device at `index` as ended.
    pub(super) fn end(&self, index: Option<usize>, since: Instant) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if let Some(i) = index {
            if let Some(n) = self.by_device.get(i) {
                n.fetch_sub(1, Ordering::SeqCst);
            }
            if let Some(micros) = self.micros.get(i) {
                let took = u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX);
                micros.fetch_add(took, Ordering::SeqCst);
            }
        }
    }

    /// Tiles running or queued now.
    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Tiles running or queued on each device now.
    pub(crate) fn in_flight_by_device(&self) -> Vec<u64> {
        self.by_device.iter().map(|n| n.load(Ordering::SeqCst)).collect()
    }

    /// Seconds each device has had tiles in flight since the start, summed over its tiles.
    pub(crate) fn tile_seconds_by_device(&self) -> Vec<f64> {
        self.micros.iter().map(|n| n.load(Ordering::SeqCst) as f64 / 1e6).collect()
    }
}
