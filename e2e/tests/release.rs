//! The release archive as a user gets it (tutorial step 1): `scripts/release` makes it,
//! `scripts/test` names it in `XCD_RELEASE_ARCHIVE`; unpacked into an empty folder with tar, its
//! xcd starts from there with an empty environment and serves, and its binaries need no library
//! beyond the C library (TLS is linked in; GPU drivers are loaded at run time).

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_archive_unpacks_and_its_daemon_serves_from_there() {
    let Some(archive) = std::env::var_os("XCD_RELEASE_ARCHIVE").map(PathBuf::from) else {
        assert!(std::env::var_os("CI").is_none(), "CI makes the archive (scripts/test runs scripts/release)");
        eprintln!("skipped: XCD_RELEASE_ARCHIVE not set (scripts/test makes the archive and sets it)");
        return;
    };
    let file = archive.file_name().and_then(|n| n.to_str()).expect("a file name").to_owned();
    let name = file.strip_suffix(".tar.bz2").expect("a .tar.bz2 archive");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(name, format!("xcd-linux-{version}"), "the tutorial's name for this platform");

    let empty = tempfile::tempdir().expect("an empty folder");
    let out = Command::new("tar").arg("xjf").arg(&archive).arg("-C").arg(empty.path()).output().expect("tar runs");
    assert!(out.status.success(), "tar: {}", String::from_utf8_lossy(&out.stderr));
    let root = empty.path().join(name);
    let mut entries: Vec<String> = std::fs::read_dir(&root)
        .expect("the archive's folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(entries, ["README.txt", "bin", "deploy"]);
    let readme = std::fs::read_to_string(root.join("README.txt")).expect("README.txt");
    assert!(readme.contains(&format!("xcd {version} (linux)")) && readme.contains("libvulkan1"), "{readme}");
    assert!(root.join("deploy/systemd/xcd.service").exists() && root.join("deploy/k8s/xcd.yaml").exists());

    for bin in ["xcd", "xcmon", "xcrun"] {
        let path = root.join("bin").join(bin);
        let version_line = Command::new(&path).arg("--version").env_clear().output().expect("runs");
        assert_eq!(String::from_utf8_lossy(&version_line.stdout).trim(), format!("{bin} {version}"));
        let ldd = Command::new("ldd").arg(&path).output().expect("ldd runs");
        for line in String::from_utf8_lossy(&ldd.stdout).lines() {
            let lib = line.split_whitespace().next().unwrap_or_default();
            let system = ["linux-vdso", "libc.so", "libm.so", "libgcc_s.so", "ld-linux", "/lib64/ld-linux"];
            assert!(system.iter().any(|s| lib.starts_with(s)), "{bin} needs {lib} at link time");
        }
    }

    let daemon = xcd_e2e::Daemon::build(root.join("bin/xcd"))
        .clean_env()
        .secret("s3cret")
        .env("XDG_RUNTIME_DIR", &std::env::temp_dir().to_string_lossy())
        .args(&["-mdns", "false"])
        .start();
    let out = xcd_e2e::curl(&["-f", &daemon.url("/healthz")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\n", "{}", daemon.stderr());
    let out = xcd_e2e::curl(&["-f", "-H", "Authorization: Bearer s3cret", &daemon.url("/v1/devices")]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"devices\""), "{}", daemon.stderr());
}
