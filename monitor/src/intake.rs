//! The trace intake: a TCP port (7482 by default) where programs write one JSON line per run.
//!
//! Each connection is read line by line, each line at most [`MAX_LINE`] bytes: a longer one is
//! skipped up to its newline and counted as refused, as is a line that is not a record; the
//! connection stays open for the next. Connections past [`IntakeLimits::connections`] are closed
//! at once, and one that sends nothing for [`IntakeLimits::idle`] is closed.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use xcd_wire::trace::{MAX_LINE, TraceRun};

use crate::store::{Received, Store};

/// What the intake allows.
#[derive(Debug, Clone, Copy)]
pub struct IntakeLimits {
    /// Senders connected at once.
    pub connections: usize,
    /// How long a connection may stay silent.
    pub idle: Duration,
}

impl Default for IntakeLimits {
    fn default() -> Self {
        IntakeLimits { connections: 256, idle: Duration::from_secs(600) }
    }
}

/// Takes trace records on `listener` into `store` until the task is dropped.
pub async fn serve_intake(listener: TcpListener, store: Store, limits: IntakeLimits) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    loop {
        let Ok((socket, from)) = listener.accept().await else { continue };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%from, "trace intake full: connection closed");
            continue;
        };
        let store = store.clone();
        tokio::spawn(async move {
            read_records(socket, from, &store, limits.idle).await;
            drop(slot);
        });
    }
}

async fn read_records(socket: TcpStream, from: std::net::SocketAddr, store: &Store, idle: Duration) {
    let mut reader = BufReader::new(socket);
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        // Read at most MAX_LINE + 1 bytes of this line, so a sender cannot grow it without bound.
        let mut limited = (&mut reader).take(MAX_LINE as u64 + 1);
        let read = match tokio::time::timeout(idle, limited.read_until(b'\n', &mut line)).await {
            Ok(Ok(read)) => read,
            Ok(Err(_)) | Err(_) => return,
        };
        if read == 0 {
            return;
        }
        if line.last() != Some(&b'\n') && line.len() > MAX_LINE {
            store.refuse();
            tracing::debug!(%from, "trace line over {MAX_LINE} bytes refused");
            if !skip_line(&mut reader, idle).await {
                return;
            }
            continue;
        }
        take_line(store, from, &line);
    }
}

/// Takes one line (at most [`MAX_LINE`] bytes, newline or not) into `store`: a record is kept,
/// anything else counted as refused. Returns whether it was kept. Fuzzed by
/// `fuzz/fuzz_targets/trace.rs`.
pub fn take_line(store: &Store, from: std::net::SocketAddr, line: &[u8]) -> bool {
    match TraceRun::from_line(line) {
        Ok(run) => {
            store.add(Received { from, at: SystemTime::now(), run });
            true
        }
        Err(e) => {
            store.refuse();
            tracing::debug!(%from, "trace line refused: {e}");
            false
        }
    }
}

/// Reads and drops the rest of an over-long line; false when the connection ended.
async fn skip_line(reader: &mut BufReader<TcpStream>, idle: Duration) -> bool {
    loop {
        let chunk = match tokio::time::timeout(idle, reader.fill_buf()).await {
            Ok(Ok(chunk)) if !chunk.is_empty() => chunk,
            _ => return false,
        };
        match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return true;
            }
            None => {
                let len = chunk.len();
                reader.consume(len);
            }
        }
    }
}
