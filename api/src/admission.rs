//! Connection slots, in two budgets, so that clients without the secret cannot keep out one with it.
//!
//! A new connection is **unproven**: it takes one of [`Limits::unproven_connections`] slots (at
//! most [`Limits::unproven_per_address`] from one address, a trusted proxy's excepted), and must
//! show the secret within [`Limits::prove_within`] of being accepted, TLS handshake included, or it
//! is closed. A new connection is always taken: when its address's share, or every unproven slot,
//! is full, the oldest unproven connection (of that address, or of all) is closed to make room.
//! Holding slots then costs an attacker new connections faster than a real client shows its
//! secret. A request that passes the secret check ([`crate::guard`]) **proves** its connection,
//! which then moves to one of [`Limits::max_connections`] slots, held until it closes or idles
//! out. On a daemon without a secret, any request that passes the check proves its connection.
//!
//! Owns the slot counts and each connection's state; the accept loop ([`crate::serve`]) acts on it.

use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::state::Limits;

#[derive(Debug, Default)]
struct Unproven {
    next: u64,
    /// Unproven connections, oldest first.
    by_age: BTreeMap<u64, Arc<Conn>>,
    per_address: HashMap<IpAddr, usize>,
}

impl Unproven {
    fn remove(&mut self, conn: &Conn) {
        if self.by_age.remove(&conn.seq).is_some() {
            if let Some(key) = conn.key {
                if let Some(n) = self.per_address.get_mut(&key) {
                    *n -= 1;
                    if *n == 0 {
                        self.per_address.remove(&key);
                    }
                }
            }
        }
    }
}

/// Both budgets.
#[derive(Debug)]
pub(crate) struct Admission {
    unproven: Mutex<Unproven>,
    unproven_slots: usize,
    per_address: usize,
    proven: Arc<Semaphore>,
    max_connections: usize,
}

impl Admission {
    pub(crate) fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Admission {
            unproven: Mutex::default(),
            unproven_slots: limits.unproven_connections.max(1),
            per_address: limits.unproven_per_address.max(1),
            proven: Arc::new(Semaphore::new(limits.max_connections)),
            max_connections: limits.max_connections,
        })
    }

    /// Takes a new connection from `client` (`exempt`: a trusted proxy, which has no per-address
    /// share). If its address already holds its share of unproven slots, that address's oldest
    /// unproven connection is closed to make room; else if every unproven slot is taken, the
    /// oldest of all is. A new connection is always taken: the newest is the likeliest to be a
    /// client about to show the secret.
    pub(crate) fn admit(self: &Arc<Self>, client: IpAddr, exempt: bool) -> Arc<Conn> {
        let key = (!exempt).then(|| crate::wrong_secrets::key(client));
        let mut unproven = self.unproven.lock();
        let full_address = key.filter(|k| unproven.per_address.get(k).is_some_and(|n| *n >= self.per_address));
        let oldest = match full_address {
            Some(k) => unproven.by_age.values().find(|c| c.key == Some(k)).cloned(),
            None if unproven.by_age.len() >= self.unproven_slots => unproven.by_age.values().next().cloned(),
            None => None,
        };
        if let Some(oldest) = oldest {
            unproven.remove(&oldest);
            oldest.evict();
        }
        let seq = unproven.next;
        unproven.next += 1;
        let conn = Arc::new(Conn {
            seq,
            key,
            admission: Arc::downgrade(self),
            proven: AtomicBool::new(false),
            evicted: AtomicBool::new(false),
            wake: Notify::new(),
            permit: Mutex::new(None),
        });
        unproven.by_age.insert(seq, conn.clone());
        if let Some(key) = key {
            *unproven.per_address.entry(key).or_default() += 1;
        }
        conn
    }

    /// Unproven connections open now.
    #[cfg(test)]
    fn unproven(&self) -> usize {
        self.unproven.lock().by_age.len()
    }

    /// Waits until every proven connection has closed.
    pub(crate) async fn all_closed(&self) {
        let every = u32::try_from(self.max_connections).unwrap_or(u32::MAX);
        let _ = self.proven.acquire_many(every).await;
    }
}

/// One connection's standing.
#[derive(Debug)]
pub(crate) struct Conn {
    seq: u64,
    /// The address it counts under among unproven ones (None: a trusted proxy's).
    key: Option<IpAddr>,
    admission: std::sync::Weak<Admission>,
    proven: AtomicBool,
    evicted: AtomicBool,
    wake: Notify,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Conn {
    /// A request on it showed the secret. False when every proven slot is taken (the request is
    /// then refused as busy, and the connection stays unproven).
    pub(crate) fn prove(&self) -> bool {
        if self.proven.load(Ordering::SeqCst) {
            return true;
        }
        let Some(admission) = self.admission.upgrade() else { return true };
        let Ok(permit) = admission.proven.clone().try_acquire_owned() else {
            return false;
        };
        *self.permit.lock() = Some(permit);
        admission.unproven.lock().remove(self);
        self.proven.store(true, Ordering::SeqCst);
        true
    }

    /// Whether a request on it has shown the secret.
    pub(crate) fn proven(&self) -> bool {
        self.proven.load(Ordering::SeqCst)
    }

    /// Whether it was closed to make room for a newer one.
    pub(crate) fn evicted(&self) -> bool {
        self.evicted.load(Ordering::SeqCst)
    }

    fn evict(&self) {
        self.evicted.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Resolves when it has been evicted.
    pub(crate) async fn until_evicted(&self) {
        while !self.evicted() {
            self.wake.notified().await;
        }
    }

    /// The connection ended: its slot, of either kind, is free.
    pub(crate) fn closed(&self) {
        if let Some(admission) = self.admission.upgrade() {
            admission.unproven.lock().remove(self);
        }
        self.permit.lock().take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(unproven: usize, per_address: usize, proven: usize) -> Limits {
        Limits {
            unproven_connections: unproven,
            unproven_per_address: per_address,
            max_connections: proven,
            ..Limits::default()
        }
    }

    #[test]
    fn the_oldest_unproven_connection_makes_room_and_proven_ones_do_not() {
        let admission = Admission::new(&limits(3, 8, 10));
        let at = |last: u8| IpAddr::from([10, 0, 0, last]);
        let first = admission.admit(at(1), false);
        let second = admission.admit(at(2), false);
        assert!(second.prove(), "proven: it leaves the unproven slots");
        let third = admission.admit(at(3), false);
        let fourth = admission.admit(at(4), false);
        assert!(!first.evicted() && !third.evicted());
        let fifth = admission.admit(at(5), false);
        assert!(first.evicted(), "the oldest unproven one went");
        assert!(!second.evicted(), "a proven one is never evicted");
        assert!(!third.evicted() && !fourth.evicted() && !fifth.evicted());
        assert_eq!(admission.unproven(), 3);
        fifth.closed();
        assert_eq!(admission.unproven(), 2);
    }

    #[test]
    fn one_address_makes_room_among_its_own_share() {
        let admission = Admission::new(&limits(100, 2, 10));
        let (guesser, other) = (IpAddr::from([10, 0, 0, 9]), IpAddr::from([10, 0, 0, 8]));
        let a = admission.admit(guesser, false);
        let elsewhere = admission.admit(other, false);
        let b = admission.admit(guesser, false);
        let c = admission.admit(guesser, false);
        assert!(a.evicted(), "its own oldest went");
        assert!(!elsewhere.evicted(), "though another address's was older");
        assert!(!b.evicted() && !c.evicted());
        let proxied = admission.admit(guesser, true);
        assert!(!b.evicted() && !proxied.evicted(), "a trusted proxy has no share");
        assert!(b.prove());
        let d = admission.admit(guesser, false);
        assert!(!c.evicted() && !d.evicted(), "a proven connection frees its share");
    }

    #[test]
    fn proven_slots_are_bounded_and_freed_on_close() {
        let admission = Admission::new(&limits(10, 10, 1));
        let one = admission.admit(IpAddr::from([10, 0, 0, 1]), false);
        let two = admission.admit(IpAddr::from([10, 0, 0, 2]), false);
        assert!(one.prove());
        assert!(one.prove(), "again: still proven");
        assert!(!two.prove(), "no proven slot left");
        one.closed();
        assert!(two.prove(), "freed");
    }
}
