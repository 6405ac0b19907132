//! The stand-in driver library (`fakecuda/`, built by cargo beside the test programs as
//! `libxcd_fakecuda.so` because this crate depends on it) for tests: put in a folder of its own
//! under the name the CUDA loader looks for, `libcuda.so`, so that a program started with that
//! folder on `LD_LIBRARY_PATH` finds it as it would find NVIDIA's driver. Linux only.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A folder holding the stand-in as `libcuda.so`, removed when dropped.
#[derive(Debug)]
pub struct FakeCuda {
    dir: tempfile::TempDir,
}

/// Where cargo put the stand-in: beside the test programs (`target/<profile>/deps/`) or one
/// folder up.
fn built() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    [deps.join("libxcd_fakecuda.so"), deps.parent()?.join("libxcd_fakecuda.so")].into_iter().find(|p| p.exists())
}

impl FakeCuda {
    /// The stand-in, ready for `LD_LIBRARY_PATH`; says how to build it where it is missing.
    pub fn install() -> FakeCuda {
        let built = built().unwrap_or_else(|| {
            panic!("the stand-in driver libxcd_fakecuda.so is not built beside the tests: xcd-e2e depends on xcd-fakecuda so that cargo builds it; run `cargo build -p xcd-fakecuda`")
        });
        let dir = tempfile::tempdir().expect("a folder for the stand-in driver");
        std::os::unix::fs::symlink(&built, dir.path().join("libcuda.so")).expect("the stand-in linked as libcuda.so");
        FakeCuda { dir }
    }

    /// The folder to put on `LD_LIBRARY_PATH`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `command` set to load the stand-in as its CUDA driver, playing the driver `FAKE_CUDA`
    /// names (an R535 driver when unset).
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command.env("LD_LIBRARY_PATH", self.dir())
    }
}
