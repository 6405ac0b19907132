//! The trace intake over real TCP: records are kept with their sender, bad and over-long lines
//! are refused without closing the connection, and connections past the limit are closed.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use xcd_monitor::{IntakeLimits, Store, serve_intake};
use xcd_wire::trace::{MAX_LINE, TraceRun, TraceWorker};

fn run(items: u64) -> TraceRun {
    TraceRun {
        version: "0.1.0".into(),
        program: "escape".into(),
        pid: 42,
        source: "main.rs:60".into(),
        block: "escape".into(),
        items,
        tiles: 2,
        started_ms: 1,
        seconds: 0.5,
        placement: None,
        workers: vec![TraceWorker {
            kind: xcd_wire::trace::WorkerKind::Cpu,
            name: "cpu".into(),
            items,
            tiles: 2,
            busy_seconds: 0.4,
            failure: None,
        }],
        spans: Vec::new(),
        merged: false,
    }
}

async fn intake(limits: IntakeLimits) -> (Store, std::net::SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("addr");
    let store = Store::default();
    tokio::spawn(serve_intake(listener, store.clone(), limits));
    (store, addr)
}

async fn until(what: &str, check: impl Fn() -> bool) {
    for _ in 0..500 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what} within 5 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_are_kept_and_bad_lines_refused_on_the_same_connection() {
    let (store, addr) = intake(IntakeLimits::default()).await;
    let mut sender = TcpStream::connect(addr).await.expect("connects");
    let mut bytes = run(1).to_line();
    bytes.extend_from_slice(b"{\"not\": \"a record\"}\n");
    bytes.extend_from_slice(b"\xff\xfe garbage\n");
    bytes.extend(std::iter::repeat_n(b'x', MAX_LINE * 3));
    bytes.push(b'\n');
    bytes.extend(run(2).to_line());
    sender.write_all(&bytes).await.expect("sent");
    until("two records and three refusals", || store.runs().len() == 2 && store.counts().0 == 3).await;
    let runs = store.runs();
    assert_eq!(runs[0].run, run(1));
    assert_eq!(runs[1].run, run(2));
    assert_eq!(runs[0].from.ip(), sender.local_addr().expect("addr").ip());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_get_each_new_run() {
    let (store, addr) = intake(IntakeLimits::default()).await;
    let mut news = store.follow();
    let mut sender = TcpStream::connect(addr).await.expect("connects");
    sender.write_all(&run(7).to_line()).await.expect("sent");
    let got = tokio::time::timeout(Duration::from_secs(5), news.recv()).await.expect("in time").expect("a run");
    assert_eq!(got.run.items, 7);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_limit_are_closed_and_idle_ones_dropped() {
    let limits = IntakeLimits { connections: 2, idle: Duration::from_millis(500) };
    let (store, addr) = intake(limits).await;
    let _a = TcpStream::connect(addr).await.expect("connects");
    let _b = TcpStream::connect(addr).await.expect("connects");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = TcpStream::connect(addr).await.expect("the TCP handshake completes");
    let mut buf = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(5), third.read(&mut buf)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "the third is closed: {closed:?}");
    // After the idle limit the first two are closed too, and a new sender gets in.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let mut fresh = TcpStream::connect(addr).await.expect("connects");
    fresh.write_all(&run(3).to_line()).await.expect("sent");
    until("the new sender's record", || store.runs().iter().any(|r| r.run.items == 3)).await;
}
