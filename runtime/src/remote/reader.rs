//! Reading a daemon without sending it work: what a monitor (xcmon) shows. The connection is a
//! program's (the same pins in `~/.xcc`, the same secret, version and layout checks), but a
//! daemon that declines work is still read.

use std::net::SocketAddr;

use xcd_wire::DeviceInfo;
use xcd_wire::rest::Capacity;

use super::RemoteError;
use super::daemon::Daemon;
use crate::home::Home;

/// A pinned connection to a daemon, for reading its capacity and devices.
pub struct Reader(Daemon);

impl Reader {
    /// Connects to `addr` (`host:port`, which names its pin) at `ip`, checking the pin (kept on
    /// first contact in `home`), the secret, the version and the layout.
    pub async fn open(addr: &str, ip: SocketAddr, home: &Home, secret: Option<&str>) -> Result<Reader, RemoteError> {
        Ok(Reader(Daemon::open(addr, ip, home, secret).await?))
    }

    /// Whether it takes work, tiles in flight and done, memory.
    pub async fn capacity(&self) -> Result<Capacity, RemoteError> {
        self.0.capacity().await
    }

    /// Its devices, with their memory now.
    pub async fn devices(&self) -> Result<Vec<DeviceInfo>, RemoteError> {
        self.0.read_devices().await
    }
}
