//! Clients' data held in memory against byte budgets of which one client address (IPv4, or IPv6
//! /64) may hold at most half: uploads being received (`Limits::upload_bytes`) and tile data
//! (`Limits::tile_bytes`). Here: a budget, what a tile costs, and a response body that keeps its
//! tile's share until it has been sent or dropped.
//!
//! A tile is charged from the moment its frame starts to arrive (the frame's bytes, and the bytes
//! its results will take) until its results have gone to HTTP/2. A client's half is taken before
//! the daemon's whole, always in that order, so that waiters never hold each other up in a ring.
//! This module only prices and holds; the tile endpoints (`routes::tiles`) decide when to wait for
//! room and when to refuse.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use hyper::body::{Frame, SizeHint};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use xcd_wire::{BlockDesc, Front};

use crate::Limits;
use crate::activity::Peer;

/// The bytes of results a tile of `count` items of `desc` returns.
pub(crate) fn result_bytes(desc: &BlockDesc, count: u32) -> u64 {
    desc.tile_outputs().map(|i| u64::from(count) * u64::from(desc.arrays[i].elem_size)).sum()
}

/// The share of `Limits::tile_bytes`, in KiB, that the frame at the front of a stream takes: its
/// own bytes and its results' (a count whose results are over the frame limit is refused when the
/// frame is read, so costs the limit). None while its header is still arriving, or when its
/// length is over the limit (the splitter refuses it).
pub(crate) fn frame_cost(front: Front, desc: &BlockDesc, limits: &Limits) -> Option<u32> {
    if front.length > limits.max_frame_bytes {
        return None;
    }
    // kind (4), tag, start, count: a tile frame's count is here by 16 bytes after the prefix.
    let results = match front.count {
        Some(count) => result_bytes(desc, count).min(limits.max_frame_bytes),
        None if front.arrived >= front.length.min(16) => 0,
        None => return None,
    };
    Some(share(front.length + results, limits))
}

/// `bytes` in KiB of the tile data budget, at most what one client may hold (a tile larger than
/// that counts as that, so that it can always be run).
pub(crate) fn share(bytes: u64, limits: &Limits) -> u32 {
    kib(bytes).min(half(limits.tile_bytes)).max(1)
}

/// What one client address may hold of a budget of `bytes`, in KiB: half.
pub(crate) fn half(bytes: u64) -> u32 {
    (kib(bytes) / 2).max(1)
}

/// Which of the two a tile found without room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Short {
    /// The client's address holds its half.
    Client,
    /// The daemon holds all of its budget.
    All,
}

/// A byte budget, in KiB, and each client address's half of it.
pub(crate) struct Budget {
    all: Arc<Semaphore>,
    per_client: u32,
    clients: Mutex<HashMap<IpAddr, Arc<Semaphore>>>,
}

/// A request's share, held until dropped.
pub(crate) struct Held {
    client: Option<OwnedSemaphorePermit>,
    _all: OwnedSemaphorePermit,
    data: Arc<Budget>,
    key: IpAddr,
}

impl Budget {
    /// A budget of `bytes`.
    pub(crate) fn new(bytes: u64) -> Arc<Self> {
        Arc::new(Budget {
            all: Arc::new(Semaphore::new(kib(bytes) as usize)),
            per_client: half(bytes),
            clients: Mutex::default(),
        })
    }

    /// The address `peer` is counted under (in-process requests all count as one).
    fn key(peer: Peer) -> IpAddr {
        peer.client.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), crate::wrong_secrets::key)
    }

    fn client(&self, key: IpAddr) -> Arc<Semaphore> {
        let mut clients = self.clients.lock();
        clients.entry(key).or_insert_with(|| Arc::new(Semaphore::new(self.per_client as usize))).clone()
    }

    /// `kib` for `peer` now, or which of the two has no room.
    pub(crate) fn try_take(self: &Arc<Self>, peer: Peer, kib: u32) -> Result<Held, Short> {
        let key = Self::key(peer);
        let client = self.client(key).try_acquire_many_owned(kib).map_err(|_| Short::Client);
        let held = client.and_then(|client| {
            let all = self.all.clone().try_acquire_many_owned(kib).map_err(|_| Short::All)?;
            Ok(Held { client: Some(client), _all: all, data: self.clone(), key })
        });
        if held.is_err() {
            self.forget_if_idle(key);
        }
        held
    }

    /// `kib` for `peer`, once there is room: the client's half first, then the daemon's whole.
    pub(crate) async fn take(self: Arc<Self>, peer: Peer, kib: u32) -> Held {
        let key = Self::key(peer);
        // Neither semaphore is ever closed.
        let client = self.client(key).acquire_many_owned(kib).await.expect("never closed");
        let all = self.all.clone().acquire_many_owned(kib).await.expect("never closed");
        Held { client: Some(client), _all: all, data: self, key }
    }

    /// Drops an address's count once nothing holds or waits on it.
    fn forget_if_idle(&self, key: IpAddr) {
        let mut clients = self.clients.lock();
        if clients
            .get(&key)
            .is_some_and(|c| Arc::strong_count(c) == 1 && c.available_permits() == self.per_client as usize)
        {
            clients.remove(&key);
        }
    }

    /// Addresses counted now.
    #[cfg(test)]
    fn clients(&self) -> usize {
        self.clients.lock().len()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        drop(self.client.take());
        self.data.forget_if_idle(self.key);
    }
}

/// A response body holding its share of the budget until it has been sent or dropped.
pub(crate) struct Holding {
    body: Body,
    _held: Held,
}

impl Holding {
    pub(crate) fn new(body: Body, held: Held) -> Self {
        Holding { body, _held: held }
    }
}

impl hyper::body::Body for Holding {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A request body of unknown size (no `Content-Length`), taking its share of a budget as its bytes
/// arrive, 256 KiB at a time; past the budget it fails with [`OverBudget`], which the endpoint
/// answers as `busy`.
pub(crate) struct Metered {
    body: Body,
    budget: Arc<Budget>,
    peer: Peer,
    arrived: u64,
    held: Vec<Held>,
    taken_kib: u64,
}

/// Why a metered body stopped: the budget had no room for more of it.
#[derive(Debug, thiserror::Error)]
#[error("no room for more of this upload")]
pub(crate) struct OverBudget(pub(crate) Short);

/// Waiting for a share of a budget, once there is room.
pub(crate) type Wanted = std::pin::Pin<Box<dyn Future<Output = Held> + Send>>;

/// What a metered body takes at a time, in KiB.
const METER_KIB: u32 = 256;

impl Metered {
    pub(crate) fn new(body: Body, budget: Arc<Budget>, peer: Peer) -> Self {
        Metered { body, budget, peer, arrived: 0, held: Vec::new(), taken_kib: 0 }
    }
}

impl hyper::body::Body for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let frame = match Pin::new(&mut self.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        if let Some(data) = frame.data_ref() {
            self.arrived += data.len() as u64;
            while self.taken_kib * 1024 < self.arrived {
                match self.budget.try_take(self.peer, METER_KIB) {
                    Ok(held) => {
                        self.held.push(held);
                        self.taken_kib += u64::from(METER_KIB);
                    }
                    Err(short) => return Poll::Ready(Some(Err(axum::Error::new(OverBudget(short))))),
                }
            }
        }
        Poll::Ready(Some(Ok(frame)))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Bytes in KiB, rounded up, as the budgets count them.
pub(crate) fn kib(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_costs_its_bytes_and_its_results_once_its_count_is_here() {
        let desc = one_output();
        let limits = Limits { tile_bytes: 64 << 20, ..Limits::default() };
        let front = |count, arrived| Front { length: 4096, count, arrived };
        assert_eq!(frame_cost(front(None, 10), &desc, &limits), None, "the count still arriving");
        assert_eq!(frame_cost(front(Some(1024), 16), &desc, &limits), Some(4 + 4), "4 KiB and 1024 × 4 bytes");
        let short = Front { length: 8, count: None, arrived: 8 };
        assert_eq!(frame_cost(short, &desc, &limits), Some(1), "a whole frame too short to be a tile");
        let huge = Front { length: 4096, count: Some(u32::MAX), arrived: 16 };
        assert_eq!(frame_cost(huge, &desc, &limits), Some(32 << 10), "at most one client's half");
        let over = Front { length: limits.max_frame_bytes + 1, count: None, arrived: 0 };
        assert_eq!(frame_cost(over, &desc, &limits), None, "refused by the splitter");
    }

    #[test]
    fn one_address_holds_at_most_half_and_is_forgotten_when_it_holds_nothing() {
        let data = Budget::new(8 << 20);
        let peer = |last: u8| Peer { client: Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))), via: None };
        let a = data.try_take(peer(1), 3 << 10).expect("room");
        assert_eq!(data.try_take(peer(1), 2 << 10).err(), Some(Short::Client), "past its half");
        let b = data.try_take(peer(2), 4 << 10).expect("another address has its own half");
        assert_eq!(data.try_take(peer(3), 2 << 10).err(), Some(Short::All), "the whole is held");
        assert_eq!(data.clients(), 2, "the refused address is not kept");
        drop((a, b));
        assert_eq!(data.clients(), 0, "nothing held, nothing kept");
        let v6 = |last: u16| Peer {
            client: Some(IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 1, 0, 0, 0, last))),
            via: None,
        };
        let _c = data.try_take(v6(1), 4 << 10).expect("room");
        assert_eq!(data.try_take(v6(2), 1).err(), Some(Short::Client), "one /64 is one client");
    }

    #[tokio::test]
    async fn a_waiter_gets_its_share_when_the_holder_lets_go() {
        let data = Budget::new(8 << 20);
        let peer = Peer::default();
        let held = data.try_take(peer, 4 << 10).expect("room");
        let waiting = tokio::spawn(data.clone().take(peer, 1 << 10));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "waits while the half is held");
        drop(held);
        let _got = waiting.await.expect("given room");
    }

    /// A block with one u32 output per item.
    fn one_output() -> BlockDesc {
        BlockDesc {
            name: "one".into(),
            entry: "main".into(),
            arrays: vec![xcd_wire::ArraySpec {
                name: "out".into(),
                elem_size: 4,
                role: xcd_wire::ArrayRole::PerItem(xcd_wire::Access::Out),
            }],
            params: Vec::new(),
            forms: Default::default(),
        }
    }
}
