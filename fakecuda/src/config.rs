//! What the stand-in driver is made to be, from `FAKE_CUDA*` variables read once: which driver
//! it plays (an R535 driver by default), its GPUs, and the misbehaviours a test asks for. Owns
//! the reading only; every entry point asks [`config`].

use std::path::PathBuf;
use std::sync::OnceLock;

/// Which driver library the stand-in plays (`FAKE_CUDA`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A working driver with two identical H200s in different slots (`r535`, the default).
    Working,
    /// The CUDA toolkit's stub `libcuda.so`: `cuInit` answers `CUDA_ERROR_STUB_LIBRARY` (`stub`).
    Stub,
    /// A working driver whose two GPUs are Maxwell cards, older than xcd's PTX (`old`).
    Old,
    /// A driver that writes a GPU's name without its closing NUL (`unterminated`): cudarc
    /// panics reading it, which discovery must survive.
    Unterminated,
}

/// The stand-in's settings.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) shape: Shape,
    /// What `cuDriverGetVersion` answers (`FAKE_CUDA_VERSION`; 12020, CUDA 12.2, an R535
    /// driver, by default).
    pub(crate) version: i32,
    /// Bytes of memory on each GPU (`FAKE_CUDA_MEMORY_MIB`; 141 GiB by default).
    pub(crate) memory: u64,
    /// The compute mode every GPU reports (`FAKE_CUDA_COMPUTE_MODE`: 0 default, 2 prohibited,
    /// 3 exclusive-process).
    pub(crate) compute_mode: i32,
    /// Which context creations never return, counted from 1 in the process
    /// (`FAKE_CUDA_HANG_CREATE=2,3`): a driver that hangs when asked for a fresh context.
    pub(crate) hang_create: Vec<u64>,
    /// Whether the GPUs lack memory pools (`FAKE_CUDA_NO_POOLS=1`), as some do (and as under
    /// some virtualisation): buffers are then made and freed without a stream (`cuMemAlloc_v2`).
    pub(crate) no_pools: bool,
    /// Whether destroying a context whose kernel still runs never returns
    /// (`FAKE_CUDA_DESTROY_HANGS=1`); by default the kernel is stopped and the context goes.
    pub(crate) destroy_hangs: bool,
    /// A file that the stand-in appends a line to for each context made, made current, let go
    /// or faulted, and each pool trimmed (`FAKE_CUDA_LOG`).
    pub(crate) log: Option<PathBuf>,
}

/// The settings, read from the environment at the first call.
pub(crate) fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(read)
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn read() -> Config {
    let shape = match var("FAKE_CUDA").as_deref() {
        Some("stub") => Shape::Stub,
        Some("old") => Shape::Old,
        Some("unterminated") => Shape::Unterminated,
        _ => Shape::Working,
    };
    let number = |name: &str, default: i64| var(name).and_then(|v| v.parse::<i64>().ok()).unwrap_or(default);
    Config {
        shape,
        version: number("FAKE_CUDA_VERSION", 12020) as i32,
        memory: (number("FAKE_CUDA_MEMORY_MIB", 141 << 10) as u64) << 20,
        compute_mode: number("FAKE_CUDA_COMPUTE_MODE", 0) as i32,
        hang_create: var("FAKE_CUDA_HANG_CREATE")
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_default(),
        no_pools: var("FAKE_CUDA_NO_POOLS").is_some_and(|v| v == "1"),
        destroy_hangs: var("FAKE_CUDA_DESTROY_HANGS").is_some_and(|v| v == "1"),
        log: var("FAKE_CUDA_LOG").map(PathBuf::from),
    }
}
