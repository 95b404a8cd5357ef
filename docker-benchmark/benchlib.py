"""What the Python benchmark scripts here share: ports, RESP encoding, redis-cli, and
starting and stopping the two servers they compare (redis-server and Meridian) the same
way every time.

Imported by the scripts beside it (Python puts a script's own folder on its path).
"""

import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MERIDIAN_BIN = os.path.join(ROOT, "target", "release", "meridian")
START_TIMEOUT_S = 20
STOP_TIMEOUT_S = 10


def free_port():
    """A TCP port on 127.0.0.1 that no socket uses now (the kernel picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp(*args):
    """One command as a RESP multibulk; arguments are bytes or anything str() takes."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def cli(port, *args, timeout=60):
    """redis-cli's reply to one command, stripped."""
    out = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, timeout=timeout)
    return out.stdout.decode().strip()


def rss_bytes(pid):
    """Process `pid`'s resident set size in bytes (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def info_field(port, section, field):
    """One integer field of INFO `section`, through redis-cli."""
    for line in cli(port, "INFO", section).splitlines():
        if line.startswith(field + ":"):
            return int(line.split(":", 1)[1])
    sys.exit(f"no {field} in INFO {section} on port {port}")


def load_average():
    """The 1-minute load average, as /proc/loadavg gives it."""
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def cpu_seconds(pid):
    """CPU time (user + system, every thread) process `pid` has used so far, from
    /proc: what a server spent, whether or not the client kept it busy."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name (field 2) may hold spaces; the fields after it do not.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server(kind, workdir, meridian_bin=MERIDIAN_BIN, core=None, meridian_args=("--shards", "1"), log=None, redis_args=()):
    """Start `kind` ("redis": no persistence; "meridian": `meridian_args` and its default
    persistence to a fresh folder under `workdir`; "redis" gets `redis_args` appended), pinned
    to `core` (a taskset core list such as "0" or "0-3") when given, and wait
    until it answers PING. Returns (process, port); exits the script if it never does."""
    port = free_port()
    if kind == "redis":
        command = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", *redis_args]
    else:
        data = tempfile.mkdtemp(dir=workdir, prefix="meridian-data-")
        command = [meridian_bin, "--port", str(port), "--data-dir", data, "--log", "warn", *meridian_args]
    if core is not None:
        command = ["taskset", "-c", str(core), *command]
    output = log if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(command, stdout=output, stderr=output)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if cli(port, "PING", timeout=5) == "PONG":
            return process, port
        time.sleep(0.05)
    process.kill()
    process.wait()
    sys.exit(f"{os.path.basename(sys.argv[0])}: {kind} did not answer PING (exit {process.returncode})")


def stop(process):
    """SIGTERM, then SIGKILL after STOP_TIMEOUT_S."""
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
