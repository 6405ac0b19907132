//! Owner-thread mechanics with a backend that only records what happens to it (the real
//! backends are exercised in tests/vulkan_device.rs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use xcd_wire::{BackendKind, Tile};

use super::*;

/// What a test makes the recorder do.
#[derive(Default, Clone)]
struct Script {
    panic_on_load: bool,
    /// Whether it lets callers run tiles on their own threads.
    any_thread: bool,
    /// The next tile panics.
    panic_next_run: Arc<AtomicBool>,
    /// The next tile runs past its deadline.
    late_next_run: Arc<AtomicBool>,
    /// The threads tiles ran on, by name.
    ran_on: Arc<Mutex<Vec<String>>>,
    /// Set while a try to bring the device back runs; the try ends once `release` is set.
    recovering: Arc<AtomicBool>,
    release: Arc<AtomicBool>,
}

struct Recorder {
    info: DeviceInfo,
    destroyed: Arc<AtomicBool>,
    script: Script,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        // A driver takes a while to tear a device down.
        std::thread::sleep(Duration::from_millis(200));
        self.destroyed.store(true, Ordering::SeqCst);
    }
}

impl Backend for Recorder {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }
    fn memory_free(&mut self) -> Option<u64> {
        Some(7)
    }
    fn load(&mut self, _id: BlockId, _desc: &BlockDesc) -> Result<(), EngineError> {
        if self.script.panic_on_load {
            panic!("driver wrapper bug");
        }
        Ok(())
    }
    fn run(&mut self, _desc: &BlockDesc, _job: &TileJob, _deadline: Duration) -> Result<TileOutput, EngineError> {
        let name = std::thread::current().name().unwrap_or("unnamed").to_owned();
        self.script.ran_on.lock().push(name);
        if self.script.panic_next_run.swap(false, Ordering::SeqCst) {
            panic!("driver wrapper bug in run");
        }
        if self.script.late_next_run.swap(false, Ordering::SeqCst) {
            return Err(EngineError::Deadline { device: self.info.id.clone(), block: "b".into(), seconds: 2 });
        }
        Ok(TileOutput { outputs: Vec::new() })
    }
    fn any_thread(&self) -> bool {
        self.script.any_thread
    }
    fn recover(&mut self) -> Result<(), RecoverError> {
        self.script.recovering.store(true, Ordering::SeqCst);
        while !self.script.release.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.script.recovering.store(false, Ordering::SeqCst);
        Ok(())
    }
}

fn recorder_with(script: Script) -> (DeviceHandle, Arc<AtomicBool>) {
    let destroyed = Arc::new(AtomicBool::new(false));
    let info = DeviceInfo {
        id: "vulkan:recorder".into(),
        backend: BackendKind::Vulkan,
        name: "recorder".into(),
        cpu: true,
        memory_total: None,
        memory_free: None,
        max_buffer_bytes: 1 << 20,
        lost: None,
    };
    let backend = Recorder { info, destroyed: destroyed.clone(), script };
    (spawn(Box::new(backend)), destroyed)
}

fn recorder(panic_on_load: bool) -> (DeviceHandle, Arc<AtomicBool>) {
    recorder_with(Script { panic_on_load, ..Script::default() })
}

fn block() -> Arc<BlockDesc> {
    use xcd_wire::{Access, ArrayRole, ArraySpec, Forms};
    Arc::new(BlockDesc {
        name: "b".into(),
        entry: "b".into(),
        arrays: vec![ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) }],
        params: Vec::new(),
        forms: Forms { wgsl: Some(String::new()), ..Forms::default() },
    })
}

fn job(block: BlockId) -> TileJob {
    TileJob { block, tile: Tile { start: 0, count: 1 }, params: Vec::new(), inputs: Vec::new(), whole: Vec::new() }
}

/// Runs four tiles from a thread named `caller`; the threads they ran on.
fn four_tiles(script: &Script) -> Vec<String> {
    let (handle, _) = recorder_with(script.clone());
    let id = handle.load_blocking(block()).expect("loads");
    let caller = std::thread::Builder::new().name("caller".into());
    let ran = caller.spawn(move || (0..4).try_for_each(|_| handle.run_blocking(job(id)).map(drop)));
    ran.expect("thread").join().expect("no panic").expect("every tile runs");
    script.ran_on.lock().clone()
}

#[test]
fn dropping_the_last_handle_waits_until_the_device_is_destroyed() {
    let (handle, destroyed) = recorder(false);
    let clone = handle.clone();
    drop(handle);
    assert!(!destroyed.load(Ordering::SeqCst), "a clone still holds the device");
    assert_eq!(clone.status_blocking().expect("status").memory_free, Some(7));
    drop(clone);
    assert!(destroyed.load(Ordering::SeqCst), "drop returned before the device was destroyed");
}

#[test]
fn a_panicking_backend_is_reported_lost_and_the_caller_lives_on() {
    let (handle, _) = recorder(true);
    let error = handle.load_blocking(block()).expect_err("the load panics");
    assert!(
        matches!(&error, EngineError::DeviceLost { reason, .. } if reason.contains("driver wrapper bug")),
        "{error}"
    );
    let again = handle.load_blocking(block()).expect_err("the device stays lost");
    assert!(matches!(again, EngineError::DeviceLost { .. }));
    let status = handle.status_blocking().expect("status still answers");
    assert_eq!(status.memory_free, None, "a lost device reports no memory");
}

#[test]
fn a_blocking_callers_tiles_run_on_its_own_thread_where_the_device_allows() {
    let ran = four_tiles(&Script { any_thread: true, ..Script::default() });
    assert_eq!(ran, ["caller"; 4]);
}

#[test]
fn a_device_that_allows_only_its_owner_runs_every_tile_there() {
    let ran = four_tiles(&Script { any_thread: false, ..Script::default() });
    assert_eq!(ran, ["xc-device vulkan:recorder"; 4]);
}

#[test]
fn async_callers_tiles_run_on_the_owner_thread() {
    let script = Script { any_thread: true, ..Script::default() };
    let (handle, _) = recorder_with(script.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        let loaded = handle.load(block()).await.expect("loads");
        for _ in 0..3 {
            handle.run(job(loaded.id()).check(&loaded).expect("fits")).await.expect("runs");
        }
    });
    assert_eq!(*script.ran_on.lock(), ["xc-device vulkan:recorder"; 3]);
}

#[test]
fn a_tile_is_checked_against_the_block_it_names_whether_checked_first_or_not() {
    let (handle, _) = recorder_with(Script::default());
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let other = Arc::new(BlockDesc { name: "other".into(), ..(*block()).clone() });
    let (a, b) = runtime
        .block_on(async { (handle.load(block()).await.expect("loads"), handle.load(other).await.expect("loads")) });
    let error = job(a.id()).check(&b).expect_err("the tile names another block");
    assert!(matches!(&error, EngineError::BadJob(m) if m.contains("checked against block")), "{error}");
    let empty = TileJob { tile: Tile { start: 0, count: 0 }, ..job(a.id()) };
    let error = empty.clone().check(&a).expect_err("no items");
    assert!(matches!(error, EngineError::BadJob(_)), "{error}");
    let error = handle.run_blocking(empty).expect_err("the engine checks a program's tile itself");
    assert!(matches!(error, EngineError::BadJob(_)), "{error}");
    assert!(handle.out_of_service().is_none(), "a bad tile is the caller's fault, not the device's");
}

/// Runs one tile that goes wrong as `script` says, on the caller's thread: the device is out of
/// service for every caller, and why says `why`.
fn goes_wrong_on_the_callers_thread(script: &Script, why: &str) {
    let (handle, _) = recorder_with(script.clone());
    let id = handle.load_blocking(block()).expect("loads");
    let error = handle.run_blocking(job(id)).expect_err("the tile goes wrong");
    assert!(error.to_string().contains(why), "{error}");
    let here = std::thread::current().name().map(str::to_owned);
    assert_eq!(script.ran_on.lock().last(), here.as_ref(), "it ran on the caller's thread");
    assert!(handle.out_of_service().is_some_and(|lost| lost.contains(why)), "callers are told");
    let status = handle.status_blocking().expect("the owner still answers");
    assert!(status.lost.is_some_and(|lost| lost.contains(why)), "status says why");
    let again = handle.run_blocking(job(id)).expect_err("the device stays out of service");
    assert!(matches!(again, EngineError::DeviceLost { .. }), "{again}");
}

#[test]
fn a_tile_that_panics_on_its_callers_thread_takes_the_device_out_of_service_only() {
    let script = Script { any_thread: true, ..Script::default() };
    script.panic_next_run.store(true, Ordering::SeqCst);
    goes_wrong_on_the_callers_thread(&script, "bug in run");
}

#[test]
fn a_tile_past_its_deadline_on_its_callers_thread_takes_the_device_out_of_service() {
    let script = Script { any_thread: true, ..Script::default() };
    script.late_next_run.store(true, Ordering::SeqCst);
    goes_wrong_on_the_callers_thread(&script, "tile deadline");
}

/// Also: a device comes back in a program with no tracing subscriber (the reason it was out of
/// service was once taken inside a log line, which tracing never evaluated there).
#[test]
fn status_answers_while_the_owner_is_busy_bringing_the_device_back() {
    let script = Script::default();
    script.late_next_run.store(true, Ordering::SeqCst);
    let (handle, _) = recorder_with(script.clone());
    let id = handle.load_blocking(block()).expect("loads");
    handle.run_blocking(job(id)).expect_err("the tile runs past its deadline");
    while !script.recovering.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = handle.status_blocking().expect("status answers");
    assert!(script.recovering.load(Ordering::SeqCst), "status answered while the try was still going on");
    assert!(status.lost.is_some_and(|lost| lost.contains("tile deadline")), "status says why");
    assert_eq!(status.memory_free, None, "a lost device reports no memory");
    script.release.store(true, Ordering::SeqCst);
    while handle.out_of_service().is_some() {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(handle.status_blocking().expect("status").lost.is_none(), "back in service");
}
