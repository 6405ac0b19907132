//! Network namespaces for tests that multicast or resolve names: two namespaces joined by a veth
//! pair on link-local addresses, made by the test and removed when it ends, so that mDNS traffic
//! never reaches the machine's own interfaces; a namespace can have more addresses and its own
//! `/etc/hosts` (which `ip netns exec` mounts from `/etc/netns/NAME/hosts`). Needs root and `ip`
//! (iproute2).

use std::process::Command;

/// Two namespaces, `a` and `b`, joined by a veth pair: `a` holds 169.254.77.1, `b` 169.254.77.2.
#[derive(Debug)]
pub struct NetPair {
    /// The first namespace's name.
    pub a: String,
    /// The second namespace's name.
    pub b: String,
    /// The veth ends, in `a` and in `b`.
    devices: (String, String),
}

/// The first namespace's address.
pub const A_ADDR: &str = "169.254.77.1";
/// The second namespace's address.
pub const B_ADDR: &str = "169.254.77.2";

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl NetPair {
    /// Makes the pair; `tag` (a few letters) tells tests apart. Fails where this user may not
    /// make namespaces (not root).
    pub fn create(tag: &str) -> Result<NetPair, String> {
        let id = format!("{tag}{}", std::process::id() % 100_000);
        let (va, vb) = (format!("xa{id}"), format!("xb{id}"));
        let pair = NetPair { a: format!("xcd-{id}-a"), b: format!("xcd-{id}-b"), devices: (va.clone(), vb.clone()) };
        ip(&["netns", "add", &pair.a])?;
        ip(&["netns", "add", &pair.b])?;
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb])?;
        for (ns, dev, addr) in [(&pair.a, &va, A_ADDR), (&pair.b, &vb, B_ADDR)] {
            ip(&["link", "set", dev, "netns", ns])?;
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(pair)
    }

    /// [`NetPair::create`], or None (the test then says it skipped) where this user cannot make
    /// namespaces; under CI, which runs as root, that fails the test instead.
    pub fn create_or_skip(tag: &str) -> Option<NetPair> {
        match NetPair::create(tag) {
            Ok(pair) => Some(pair),
            Err(e) if std::env::var_os("CI").is_none() => {
                eprintln!("skipped: cannot make network namespaces here ({e}); run as root");
                None
            }
            Err(e) => panic!("cannot make network namespaces under CI: {e}"),
        }
    }

    /// Gives namespace `b` another address on the link (169.254.77.x).
    pub fn add_b_address(&self, addr: &str) -> Result<(), String> {
        ip(&["-n", &self.b, "addr", "add", &format!("{addr}/24"), "dev", &self.devices.1])
    }

    /// Gives namespace `ns` (one of the pair's) its own `/etc/hosts`, with `lines` after the
    /// loopback entries: programs run there by [`NetPair::exec`] resolve names by it. Removed
    /// with the pair.
    pub fn hosts(&self, ns: &str, lines: &str) -> Result<(), String> {
        assert!(ns == self.a || ns == self.b, "{ns} is not one of this pair's namespaces");
        let dir = std::path::Path::new("/etc/netns").join(ns);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("hosts"), format!("127.0.0.1 localhost\n::1 localhost\n{lines}\n"))
            .map_err(|e| format!("{}: {e}", dir.display()))
    }

    /// Takes the link between the two namespaces down (a cable pulled: no packet passes, no
    /// connection is told) or up again.
    pub fn set_link(&self, up: bool) -> Result<(), String> {
        ip(&["-n", &self.b, "link", "set", &self.devices.1, if up { "up" } else { "down" }])
    }

    /// Caps the link's rate both ways with a token bucket (`tc … tbf`, e.g. `rate` "20mbit").
    pub fn shape(&self, rate: &str) -> Result<(), String> {
        for (ns, dev) in [(&self.a, &self.devices.0), (&self.b, &self.devices.1)] {
            let out = Command::new("ip")
                .args(["netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", rate])
                .args(["burst", "64kb", "latency", "100ms"])
                .output()
                .map_err(|e| format!("tc: {e}"))?;
            if !out.status.success() {
                return Err(format!("tc in {ns}: {}", String::from_utf8_lossy(&out.stderr).trim()));
            }
        }
        Ok(())
    }

    /// A command run inside namespace `ns`.
    pub fn exec(ns: &str, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", ns]).arg(program);
        command
    }
}

impl Drop for NetPair {
    fn drop(&mut self) {
        // Deleting a namespace deletes the veth end in it, and with it the pair.
        let _ = ip(&["netns", "del", &self.a]);
        let _ = ip(&["netns", "del", &self.b]);
        for ns in [&self.a, &self.b] {
            let _ = std::fs::remove_dir_all(std::path::Path::new("/etc/netns").join(ns));
        }
    }
}
