//! The tutorial's other platforms (docs/platforms.md), against a native daemon on loopback:
//! escape and xcrun built here for a Raspberry Pi 5 (aarch64, run under qemu-user) and for
//! Windows (run under Wine, with its settings where a Windows user has them), and escape built
//! for another data layout (big-endian s390x and 32-bit armv7, under qemu-user), which the
//! daemon refuses by layout, both sides naming both layouts, while the program computes the right
//! answer on its own CPU. `scripts/cross` builds them; `XCD_CROSS` names the target folder.

use std::path::{Path, PathBuf};
use std::process::Command;

use xcd_e2e::Daemon;

const SECRET: &str = "cross-secret";
/// Small enough for an emulated CPU.
const SIZE: [&str; 6] = ["--width", "192", "--height", "160", "--max-iter", "300"];

/// The folder `scripts/cross` built into, or None (a skip, outside CI) when it did not run.
fn cross() -> Option<PathBuf> {
    match std::env::var_os("XCD_CROSS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI builds the foreign binaries (scripts/test runs scripts/cross)"
            );
            eprintln!("skipped: XCD_CROSS not set (scripts/cross builds the foreign binaries; scripts/test sets it)");
            None
        }
    }
}

/// A native binary of this workspace.
fn native(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_escape")).with_file_name(name)
}

/// What a program printed.
struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Ran {
    /// escape's last line: the total of all iteration counts.
    fn total(&self) -> &str {
        self.stdout.lines().last().unwrap_or_default()
    }
}

fn run(command: &mut Command) -> Ran {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The total escape gives natively, on this machine's CPU.
fn native_total() -> String {
    let ran = run(Command::new(env!("CARGO_BIN_EXE_escape")).args(SIZE).env("XC_PAR_WORKERS", "cpu"));
    assert!(ran.ok, "native escape: {}", ran.stderr);
    ran.total().to_owned()
}

fn daemon() -> Daemon {
    Daemon::build(native("xcd")).secret(SECRET).args(&["-mdns", "false"]).start()
}

/// `program` (a command that runs a foreign binary) set to use `daemon` for every tile, with
/// its settings in `home`.
fn against<'a>(program: &'a mut Command, daemon: &Daemon, home: &Path) -> &'a mut Command {
    program
        .env("XC_PAR_REMOTE", format!("localhost:{}", daemon.port))
        .env("XC_PAR_SECRET", SECRET)
        .env("XC_PAR_REPORT", "1")
        .env("HOME", home)
}

/// A command that runs a Linux binary of another architecture under qemu-user.
fn qemu(arch: &str, sysroot: &str, bin: &Path) -> Command {
    assert!(bin.exists(), "{} is not built (scripts/cross)", bin.display());
    let mut command = Command::new(format!("qemu-{arch}-static"));
    command.arg("-L").arg(sysroot).arg(bin);
    command
}

#[test]
fn a_pi5_build_runs_against_the_daemon_and_gives_the_native_total() {
    let Some(cross) = cross() else { return };
    let bins = cross.join("aarch64-unknown-linux-gnu/cross");
    let daemon = daemon();
    let home = tempfile::tempdir().expect("HOME");
    let sysroot = "/usr/aarch64-linux-gnu";

    let check = run(against(
        qemu("aarch64", sysroot, &bins.join("xcrun")).arg("check").arg(format!("localhost:{}", daemon.port)),
        &daemon,
        home.path(),
    ));
    assert!(check.ok && check.stdout.contains("layout   little-64"), "xcrun check: {}{}", check.stdout, check.stderr);

    let ran = run(against(
        qemu("aarch64", sysroot, &bins.join("escape")).args(SIZE).env("XC_PAR_WORKERS", "remote"),
        &daemon,
        home.path(),
    ));
    assert!(ran.ok, "escape under qemu-aarch64: {}", ran.stderr);
    assert_eq!(ran.total(), native_total(), "every tile ran on the daemon: {}", ran.stderr);
    assert!(ran.stderr.contains("par: remote worker remote:localhost:"), "{}", ran.stderr);
}

#[test]
fn a_windows_build_runs_under_wine_with_its_settings_in_the_profile() {
    let Some(cross) = cross() else { return };
    let bins = cross.join("x86_64-pc-windows-gnu/cross");
    let daemon = daemon();
    let scratch = tempfile::tempdir().expect("a Wine prefix");
    let prefix = scratch.path().join("wine");
    let wine = |args: &[&std::ffi::OsStr]| {
        let mut command = Command::new("wine");
        command.args(args).env("WINEPREFIX", &prefix).env("WINEDEBUG", "-all").env_remove("DISPLAY");
        command
    };
    let boot = run(&mut wine(&["wineboot".as_ref(), "--init".as_ref()]));
    assert!(boot.ok, "wineboot: {}", boot.stderr);
    // Wine 8.0 lacks the DLL Rust's standard library takes its random bytes from (e2e/wine/).
    std::fs::copy(
        cross.join("cross/bcryptprimitives.dll"),
        prefix.join("drive_c/windows/system32/bcryptprimitives.dll"),
    )
    .expect("the shim is built (scripts/cross)");

    let escape = bins.join("escape.exe");
    let ran =
        run(against(wine(&[escape.as_os_str()]).args(SIZE).env("XC_PAR_WORKERS", "remote"), &daemon, scratch.path()));
    assert!(ran.ok, "escape.exe under Wine: {}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.total(), native_total(), "every tile ran on the daemon: {}", ran.stderr);

    // The pin lives where a Windows user's settings do: %USERPROFILE%\.xcc\settings.toml.
    let users = prefix.join("drive_c/users");
    let settings: Vec<PathBuf> = std::fs::read_dir(&users)
        .expect("the prefix's users")
        .flatten()
        .map(|user| user.path().join(".xcc/settings.toml"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(settings.len(), 1, "one profile holds the settings: {settings:?}");
    let text = std::fs::read_to_string(&settings[0]).expect("settings.toml");
    assert!(text.contains(&format!("localhost:{}", daemon.port)) && text.contains("tls.pin"), "{text}");

    // The daemon as the tutorial starts it in PowerShell; Wine has no GPU to serve, so it must
    // say so and stop (EX_UNAVAILABLE) rather than hang or crash.
    let xcd = bins.join("xcd.exe");
    let port = xcd_e2e::free_port().to_string();
    let served = run(wine(&[xcd.as_os_str(), "-port".as_ref(), port.as_ref(), "-mdns".as_ref(), "false".as_ref()])
        .env("XC_PAR_SECRET", SECRET));
    assert!(!served.ok && served.stderr.contains("xcd: no device to serve"), "xcd.exe under Wine: {}", served.stderr);
    assert!(served.stderr.contains("nvcuda.dll not found"), "names Windows' CUDA driver: {}", served.stderr);

    let xcrun = bins.join("xcrun.exe");
    let check = run(against(
        &mut wine(&[xcrun.as_os_str(), "check".as_ref(), format!("localhost:{}", daemon.port).as_ref()]),
        &daemon,
        scratch.path(),
    ));
    assert!(check.ok && check.stdout.contains("matches its pin"), "xcrun.exe check: {}{}", check.stdout, check.stderr);
}

#[test]
fn programs_of_another_data_layout_are_refused_and_compute_alone() {
    let Some(cross) = cross() else { return };
    let daemon = daemon();
    let want = native_total();
    for (arch, triple, sysroot, layout) in [
        ("s390x", "s390x-unknown-linux-gnu", "/usr/s390x-linux-gnu", "big-64"),
        ("arm", "armv7-unknown-linux-gnueabihf", "/usr/arm-linux-gnueabihf", "little-32"),
    ] {
        let home = tempfile::tempdir().expect("HOME");
        let bin = cross.join(triple).join("debug/escape");
        let ran = run(against(qemu(arch, sysroot, &bin).args(SIZE), &daemon, home.path()));
        assert!(ran.ok, "escape for {triple}: {}", ran.stderr);
        let words = format!("a different data layout: the program is {layout} and the daemon is little-64");
        assert!(ran.stderr.contains(&words), "the program says which layouts ({triple}): {}", ran.stderr);
        assert_eq!(ran.total(), want, "{triple} computed alone: {}", ran.stderr);
        assert!(!ran.stderr.contains("par: remote worker"), "no tile went to the daemon: {}", ran.stderr);
        let log = daemon.stderr();
        assert!(log.contains(&format!("refused: {words}")), "the daemon says which layouts ({triple}): {log}");
    }
}

#[test]
fn the_foreign_archives_hold_what_the_tutorial_unpacks() {
    let Some(cross) = cross() else { return };
    let version = env!("CARGO_PKG_VERSION");
    let archives = cross.join("archives");
    let zip = archives.join(format!("xcd-win64-{version}.zip"));
    let list = run(Command::new("python3").args(["-m", "zipfile", "-l"]).arg(&zip));
    assert!(list.ok, "{}: {}", zip.display(), list.stderr);
    for bin in ["xcd.exe", "xcmon.exe", "xcrun.exe"] {
        assert!(list.stdout.contains(&format!("xcd-win64-{version}/bin/{bin}")), "{bin} in {}", list.stdout);
    }
    let tar = archives.join(format!("xcd-linux-arm64-{version}.tar.bz2"));
    let list = run(Command::new("tar").arg("tjf").arg(&tar));
    assert!(list.ok, "{}: {}", tar.display(), list.stderr);
    for bin in ["xcd", "xcmon", "xcrun"] {
        assert!(
            list.stdout.lines().any(|l| l == format!("xcd-linux-arm64-{version}/bin/{bin}")),
            "{bin} in {}",
            list.stdout
        );
    }
}
