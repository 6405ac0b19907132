//! blur, a block written only as WGSL, gives one checksum on every worker: the generated CPU
//! form, the local GPU (llvmpipe here), both at once, the PTX form in the interpreter, and a
//! daemon over TLS and HTTP/2.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use xcd_e2e::Daemon;
use xcd_runtime::{Par, Settings, WorkerChoice};

xcd_runtime::include_blocks!();

const SIZE: [&str; 6] = ["--width", "300", "--height", "200", "--passes", "3"];
const SECRET: &str = "blur-secret-words";

/// Runs the blur program with `env`; its checksum and its report.
fn blur_program(home: &Path, env: &[(&str, &str)]) -> (String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_blur"));
    command.args(SIZE).env("XCC_HOME", home).env("XC_PAR_REPORT", "1").env("XDG_RUNTIME_DIR", std::env::temp_dir());
    command.env_remove("XC_PAR_SECRET").env_remove("XC_PAR_REMOTE").env_remove("XC_PAR_WORKERS");
    command.envs(env.iter().copied());
    let out = command.output().expect("blur starts");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "blur with {env:?} failed: {stderr}");
    (String::from_utf8_lossy(&out.stdout).trim().to_owned(), stderr)
}

fn has_gpu(home: &Path) -> bool {
    let out = Command::new(env!("CARGO_BIN_EXE_blur"))
        .args(["--width", "8", "--height", "8", "--passes", "1"])
        .env("XCC_HOME", home)
        .env("XC_PAR_WORKERS", "gpu")
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .expect("blur starts");
    out.status.success()
}

#[test]
fn every_local_worker_gives_one_checksum() {
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, report) = blur_program(home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    assert_eq!(cpu.len(), 16, "the checksum is 16 hex digits: {cpu:?}");
    assert!(report.contains("across cpu ("), "{report}");
    assert!(report.contains("examples/blur/src/main.rs:"), "the report names the typed call's caller: {report}");
    if !has_gpu(home.path()) {
        assert!(std::env::var_os("CI").is_none(), "CI installs llvmpipe, so a GPU worker must exist");
        eprintln!("skipped the GPU runs: no GPU worker here");
        return;
    }
    let (gpu, report) = blur_program(home.path(), &[("XC_PAR_WORKERS", "gpu")]);
    assert!(report.contains("across gpu:"), "{report}");
    assert_eq!(gpu, cpu, "the GPU and the generated CPU form differ");
    let (both, _) = blur_program(home.path(), &[("XC_PAR_WORKERS", "cpu,gpu")]);
    assert_eq!(both, cpu, "CPU+GPU and CPU differ");
}

#[test]
fn a_daemon_gives_the_same_checksum() {
    let daemon = Daemon::beside(env!("CARGO_BIN_EXE_blur")).secret(SECRET).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (cpu, _) = blur_program(home.path(), &[("XC_PAR_WORKERS", "cpu")]);
    let remote = format!("localhost:{}", daemon.port);
    let env = [("XC_PAR_SECRET", SECRET), ("XC_PAR_REMOTE", remote.as_str()), ("XC_PAR_WORKERS", "remote")];
    let (got, report) = blur_program(home.path(), &env);
    assert!(report.contains("across remote:localhost:"), "every tile ran on the daemon: {report}");
    assert_eq!(got, cpu, "the daemon and the generated CPU form differ: {report}");
}

/// A program (its settings folder in `home`) whose only worker is the daemon on `port`, and one
/// on the CPU form for the bits it must give.
fn remote_and_cpu(port: u16, home: &Path) -> (Par, Par) {
    let remote = Settings {
        workers: vec![WorkerChoice::Remote],
        remote: vec![format!("127.0.0.1:{port}")],
        secret: Some(SECRET.into()),
        home: Some(home.display().to_string()),
        ..Settings::default()
    };
    let cpu = Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() };
    (Par::new(remote).expect("the daemon's worker"), Par::new(cpu).expect("the cpu worker"))
}

/// One blur pass of a 64×48 `image` on `par`: a hash of the result's bits, or why it failed.
fn pass(par: &Par, image: &[f32]) -> Result<u64, String> {
    let (w, h) = (64u32, 48u32);
    let mut out = vec![0.0f32; image.len()];
    blur::run(par, w * h, w, h, 0.5, image, &mut out).map_err(|e| e.to_string())?;
    Ok(out.iter().fold(0u64, |h, v| h.rotate_left(7) ^ u64::from(v.to_bits())))
}

#[test]
fn a_daemon_that_restarts_is_sent_the_block_and_arrays_again() {
    // One program's life across a restart of its daemon (same address, same key): the daemon
    // has forgotten the block and the whole arrays the program sent before, and must get them
    // again rather than refuse every later tile of that block.
    let daemon_home = tempfile::tempdir().expect("XCD_HOME");
    let start =
        |port: u16| Daemon::beside(env!("CARGO_BIN_EXE_blur")).secret(SECRET).home(daemon_home.path()).port(port);
    let daemon = start(0).start();
    let port = daemon.port;
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (par, cpu) = remote_and_cpu(port, home.path());
    let first: Vec<f32> = (0..64 * 48).map(|i| (i % 17) as f32 * 0.25).collect();
    assert_eq!(pass(&par, &first), pass(&cpu, &first), "before the restart");
    daemon.terminate(Duration::from_secs(10));
    let _daemon = start(port).start();
    // The same image (a whole array the daemon held before) and a new one.
    assert_eq!(pass(&par, &first), pass(&cpu, &first), "after the restart, an array sent before");
    let second: Vec<f32> = first.iter().map(|v| v * 0.5 + 1.0).collect();
    assert_eq!(pass(&par, &second), pass(&cpu, &second), "after the restart, a new array");
}

#[test]
fn a_whole_array_the_daemon_dropped_for_room_is_sent_again() {
    // The daemon keeps 32 MiB of whole arrays (`-memory 68`); another client's 40 MiB push out
    // the image this program sent. The program still counts it held, so its next pass names it
    // in a tile: the daemon refuses that tile (unknown array), and the program sends the array
    // again and the tile once more, rather than give the daemon up for the run.
    let daemon = Daemon::beside(env!("CARGO_BIN_EXE_blur")).secret(SECRET).args(&["-memory", "68"]).start();
    let home = tempfile::tempdir().expect("XCC_HOME");
    let (par, cpu) = remote_and_cpu(daemon.port, home.path());
    let image: Vec<f32> = (0..64 * 48).map(|i| (i % 19) as f32 * 0.125).collect();
    let want = pass(&cpu, &image);
    assert_eq!(pass(&par, &image), want, "the first pass");
    let dir = tempfile::tempdir().expect("a folder");
    for i in 0..5u8 {
        let body = vec![i; 8 << 20];
        let hash: String = xcd_runtime::wire::content_hash(&body).iter().map(|b| format!("{b:02x}")).collect();
        let file = dir.path().join(format!("{i}"));
        std::fs::write(&file, &body).expect("written");
        let out = xcd_e2e::curl(&[
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "PUT",
            "-H",
            &format!("authorization: Bearer {SECRET}"),
            "--data-binary",
            &format!("@{}", file.display()),
            &daemon.url(&format!("/v1/arrays/{hash}")),
        ]);
        assert_eq!(String::from_utf8_lossy(&out.stdout), "201", "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(pass(&par, &image), want, "the pass after the daemon dropped its image");
    // The only refusals of this daemon's life: the tiles in flight (at most its depth, 3) that
    // named the dropped image, each then sent again.
    let refused = daemon.metric(SECRET, "xcd_refusals_total");
    assert!((1.0..=3.0).contains(&refused), "the daemon had dropped the image: {refused} tiles refused");
}

#[test]
fn the_ptx_form_in_the_interpreter_gives_the_cpu_forms_bits() {
    const SIM: &str = "gpu:cuda:xcd-ptxsim";
    let device = xcd_engine::owner::spawn(Box::new(xcd_ptxsim::SimDevice::new()));
    let inventory = xcd_engine::Inventory { devices: vec![device], notes: Vec::new() };
    let settings = Settings { workers: vec![WorkerChoice::named(SIM).expect("a worker name")], ..Settings::default() };
    let sim = Par::with_inventory(settings, inventory).expect("the interpreter's worker");
    let cpu = Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker");
    let (w, h) = (23u32, 11u32);
    let image: Vec<f32> = (0..w * h).map(|i| (i % 13) as f32 * 0.37 - 1.0).collect();
    let mut want = image.iter().map(|v| v * 0.5).collect::<Vec<_>>();
    let mut got = want.clone();
    blur::run(&cpu, w * h, w, h, 0.3, &image, &mut want).expect("the CPU form runs");
    blur::run(&sim, w * h, w, h, 0.3, &image, &mut got).expect("the PTX form runs");
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn the_typed_call_checks_lengths_against_n() {
    let cpu = Par::new(Settings { workers: vec![WorkerChoice::Cpu], ..Settings::default() }).expect("the cpu worker");
    let image = vec![0.0f32; 12];
    let mut out = vec![0.0f32; 11];
    let e = blur::run(&cpu, 12, 4, 3, 0.5, &image, &mut out).expect_err("out is one short");
    assert_eq!(e.to_string(), "block blur: array out has 11 elements; a run of 12 items needs 12");
}
