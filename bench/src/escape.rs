//! The escape block through the runtime, three ways:
//! - `overhead`: the block through a daemon on loopback against the same device model in this
//!   process (here both are llvmpipe on the same cores);
//! - `scaling`: 1, 2, … daemons, each pinned to a core of its own with one llvmpipe thread
//!   (`taskset`), against the sum of their rates alone;
//! - `placement`: every fixed set of workers (the CPU, this machine's GPU, a daemon's GPU), and
//!   the measuring first run of a fresh settings folder against the best of them.
//!
//! Every run's counts must add up to the same total (the same answer on every worker).

use std::path::Path;
use std::time::{Duration, Instant};

use xcd_e2e::Daemon;
use xcd_runtime::{Args, Par, Settings, WorkerChoice};

use crate::Options;

/// A size of the escape block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Size {
    /// Pixels across.
    pub width: u32,
    /// Pixels down.
    pub height: u32,
    /// Iterations at most per pixel.
    pub iters: u32,
}

impl Size {
    /// `WIDTHxHEIGHTxITERS`, as `--escape` takes it.
    pub(crate) fn parse(text: &str) -> Option<Size> {
        let mut parts = text.split('x').map(|p| p.parse::<u32>().ok().filter(|&v| v > 0));
        let size = Size { width: parts.next()??, height: parts.next()??, iters: parts.next()?? };
        (parts.next().is_none() && u64::from(size.width) * u64::from(size.height) <= u64::from(u32::MAX))
            .then_some(size)
    }

    fn items(self) -> u32 {
        self.width * self.height
    }

    /// Millions of pixels a second in `t`.
    fn rate(self, t: Duration) -> f64 {
        f64::from(self.items()) / t.as_secs_f64() / 1e6
    }

    fn describe(self) -> String {
        format!("escape {}×{}, {} iterations", self.width, self.height, self.iters)
    }
}

/// The size a measure runs at: `--escape` if given, else the full or the smoke size.
fn size(o: &Options, full: Size) -> Size {
    o.escape.unwrap_or(if o.quick { Size { width: 256, height: 256, iters: 100 } } else { full })
}

/// Runs escape on `par`, checking its total against the first run's.
struct Runner {
    size: Size,
    counts: Vec<u32>,
    total: Option<u64>,
    reps: usize,
}

impl Runner {
    fn new(size: Size, quick: bool) -> Self {
        Runner { size, counts: vec![0; size.items() as usize], total: None, reps: if quick { 1 } else { 3 } }
    }

    /// One run; how long it took and the program's report lines.
    fn once(&mut self, par: &Par) -> Result<(Duration, Vec<String>), String> {
        let s = self.size;
        self.counts.fill(0);
        let started = Instant::now();
        let report = par
            .run(
                &xcd_kernels::escape(),
                s.items(),
                Args::new().u32(s.width).u32(s.height).u32(s.iters).output(&mut self.counts),
            )
            .map_err(|e| e.to_string())?;
        let took = started.elapsed();
        let total: u64 = self.counts.iter().map(|&c| u64::from(c)).sum();
        match self.total {
            None => self.total = Some(total),
            Some(first) if first != total => {
                return Err(format!("escape's total was {total}, {first} in the first run: a worker computed wrong"));
            }
            Some(_) => {}
        }
        Ok((took, report.lines()))
    }

    /// The best of `reps` runs after a warm-up at a small size.
    fn best(&mut self, par: &Par) -> Result<Duration, String> {
        warm(par, self.size.iters)?;
        let mut best = Duration::MAX;
        for _ in 0..self.reps {
            best = best.min(self.once(par)?.0);
        }
        Ok(best)
    }
}

/// A small run that loads the block everywhere (and leaves no placement for the real size).
fn warm(par: &Par, iters: u32) -> Result<(), String> {
    let mut small = vec![0u32; 64 * 64];
    par.run(&xcd_kernels::escape(), 64 * 64, Args::new().u32(64).u32(64).u32(iters).output(&mut small))
        .map(|_| ())
        .map_err(|e| format!("warming up: {e}"))
}

/// A program's settings with these workers and daemons, remembering under `home`.
fn settings(workers: Vec<WorkerChoice>, daemons: &[&Daemon], home: &Path) -> Settings {
    let ports: Vec<u16> = daemons.iter().map(|d| d.port).collect();
    crate::settings(workers, &ports, home)
}

fn par(settings: Settings) -> Result<Par, String> {
    Par::new(settings).map_err(|e| e.to_string())
}

fn daemon(o: &Options) -> Daemon {
    crate::daemon(o).start()
}

/// Remoting overhead: the block through a daemon against the same device in this process.
pub(crate) fn overhead(o: &Options) -> Result<String, String> {
    let size = size(o, Size { width: 2048, height: 2048, iters: 1000 });
    let daemon = daemon(o);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut runner = Runner::new(size, o.quick);
    let local = runner.best(&par(settings(vec![crate::local_gpu(o)?], &[], home.path()))?)?;
    let remote = runner.best(&par(settings(vec![WorkerChoice::Remote], &[&daemon], home.path()))?)?;
    let row =
        |what: &str, t: Duration| format!("| {what} | {:.3} s | {:.2} M pixels/s |\n", t.as_secs_f64(), size.rate(t));
    let mut text = format!(
        "## Remoting overhead\n\n{}, best of {} after a warm-up; the daemon's device and this machine's are the same \
         model (here the same cores).\n\n| what | time | rate |\n|---|---:|---:|\n",
        size.describe(),
        runner.reps
    );
    text.push_str(&row("xcd: the block through a daemon on loopback (remote worker only)", remote));
    text.push_str(&row("baseline: the same block on this machine's own GPU worker, in process", local));
    text.push_str(&format!(
        "\nxcd against in process: **{:.3}×** (goal ≤ 1.03×).\n",
        remote.as_secs_f64() / local.as_secs_f64()
    ));
    Ok(text)
}

/// Scaling: daemons on cores of their own, alone and together.
pub(crate) fn scaling(o: &Options) -> Result<String, String> {
    let size = size(o, Size { width: 2048, height: 2048, iters: 1000 });
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let count = cores.min(3);
    if count < 2 {
        return Ok("## Scaling\n\nSkipped: this machine has one core.\n".into());
    }
    let daemons: Vec<Daemon> =
        (0..count).map(|i| crate::daemon(o).cpus(&i.to_string()).env("LP_NUM_THREADS", "1").start()).collect();
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut runner = Runner::new(size, o.quick);
    let remote = |which: &[&Daemon]| par(settings(vec![WorkerChoice::Remote], which, home.path()));
    let mut solo = Vec::new();
    for d in &daemons {
        solo.push(size.rate(runner.best(&remote(&[d])?)?));
    }
    let mut text = format!(
        "## Scaling\n\n{}, best of {} after a warm-up; daemon i pinned to CPU i with one llvmpipe thread (`taskset`), \
         this program unpinned and using only the daemons; {cores} cores here.\n\n\
         | daemons | rate together | sum of their rates alone | efficiency |\n|---:|---:|---:|---:|\n",
        size.describe(),
        runner.reps
    );
    text.push_str(&format!("| 1 | {:.2} M pixels/s | {:.2} M pixels/s | 1.00 |\n", solo[0], solo[0]));
    let mut last = 1.0;
    for k in 2..=count {
        let which: Vec<&Daemon> = daemons[..k].iter().collect();
        let together = size.rate(runner.best(&remote(&which)?)?);
        let sum: f64 = solo[..k].iter().sum();
        last = together / sum;
        text.push_str(&format!("| {k} | {together:.2} M pixels/s | {sum:.2} M pixels/s | {last:.2} |\n"));
    }
    text.push_str(&format!(
        "\nEfficiency with {count} daemons: **{last:.2}** (goal ≥ 0.95). With {cores} cores there is no core left for \
         this program, its TLS or local workers: they share the daemons' cores.\n"
    ));
    Ok(text)
}

/// Placement: every fixed set of workers, then the measuring first run against the best.
pub(crate) fn placement(o: &Options) -> Result<String, String> {
    // Issue 4's size: runs of a second or more, which measuring is made for.
    let size = size(o, Size { width: 4096, height: 4096, iters: 1000 });
    let daemon = daemon(o);
    let home = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut runner = Runner::new(size, o.quick);
    let sets: [(&str, &[WorkerChoice]); 7] = [
        ("cpu", &[WorkerChoice::Cpu]),
        ("gpu", &[WorkerChoice::Gpu]),
        ("remote", &[WorkerChoice::Remote]),
        ("cpu+gpu", &[WorkerChoice::Cpu, WorkerChoice::Gpu]),
        ("cpu+remote", &[WorkerChoice::Cpu, WorkerChoice::Remote]),
        ("gpu+remote", &[WorkerChoice::Gpu, WorkerChoice::Remote]),
        ("cpu+gpu+remote", &[WorkerChoice::Cpu, WorkerChoice::Gpu, WorkerChoice::Remote]),
    ];
    let mut text = format!(
        "## Placement\n\n{}, best of {} after a warm-up for each fixed set; then, {} times, a program with a fresh \
         settings folder (the block warmed at another size) measures its placement in its first run.\n\n\
         | workers | time | rate |\n|---|---:|---:|\n",
        size.describe(),
        runner.reps,
        runner.reps
    );
    let mut best = ("", Duration::MAX);
    for (name, workers) in sets {
        let t = runner.best(&par(settings(workers.to_vec(), &[&daemon], home.path()))?)?;
        text.push_str(&format!("| fixed `{name}` | {:.3} s | {:.2} M pixels/s |\n", t.as_secs_f64(), size.rate(t)));
        if t < best.1 {
            best = (name, t);
        }
    }
    let mut measuring = Vec::new();
    let mut chosen = Vec::new();
    for _ in 0..runner.reps {
        let fresh = tempfile::tempdir().map_err(|e| e.to_string())?;
        let program = par(settings(Vec::new(), &[&daemon], fresh.path()))?;
        warm(&program, size.iters)?;
        let (t, lines) = runner.once(&program)?;
        measuring.push(t);
        chosen.extend(lines.into_iter().filter(|l| l.starts_with("par: placement")));
    }
    measuring.sort();
    let ratios: Vec<String> =
        measuring.iter().map(|t| format!("{:.2}×", t.as_secs_f64() / best.1.as_secs_f64())).collect();
    let first = measuring.first().copied().unwrap_or_default();
    text.push_str(&format!(
        "| measuring first run (best) | {:.3} s | {:.2} M pixels/s |\n",
        first.as_secs_f64(),
        size.rate(first)
    ));
    text.push_str(&format!(
        "\nBest fixed set: `{}`. Measuring first runs against it: **{}** (goal ≤ 1.10×).\n",
        best.0,
        ratios.join(", ")
    ));
    for line in chosen {
        text.push_str(&format!("\n    {line}"));
    }
    text.push('\n');
    Ok(text)
}
