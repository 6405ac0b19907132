//! A TCP relay for tests, between a program and a daemon on loopback: it adds a delay each way
//! (this kernel's `tc` has no netem), and can stall, holding every byte without closing a
//! connection, as a link that stops passing traffic does, and resume.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running relay; it stops taking connections when dropped.
pub struct Relay {
    /// The port programs connect to.
    pub port: u16,
    stalled: Arc<AtomicBool>,
    stopped: Arc<AtomicBool>,
}

impl Relay {
    /// Relays 127.0.0.1:`port` (a free one) to `target`, each chunk delivered `delay` after it
    /// was read, each way.
    pub fn start(target: SocketAddr, delay: Duration) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the relay");
        let port = listener.local_addr().map(|a| a.port()).expect("its port");
        listener.set_nonblocking(true).expect("non-blocking accept");
        let (stalled, stopped) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (stall, stop) = (stalled.clone(), stopped.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        let Ok(server) = TcpStream::connect(target) else { continue };
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        for (from, to) in [(&client, &server), (&server, &client)] {
                            if let (Ok(from), Ok(to)) = (from.try_clone(), to.try_clone()) {
                                pump(from, to, delay, stall.clone());
                            }
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Relay { port, stalled, stopped }
    }

    /// From now on, holds every byte and passes none, closing nothing.
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    /// Passes bytes again, those held first, as a link does when it comes back.
    pub fn resume(&self) {
        self.stalled.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to`, each chunk `delay` late; while stalled, writes nothing.
fn pump(mut from: TcpStream, mut to: TcpStream, delay: Duration, stalled: Arc<AtomicBool>) {
    let (tx, rx) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send((Instant::now() + delay, buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        for (due, chunk) in rx {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            while stalled.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if to.write_all(&chunk).is_err() {
                return;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}
