"""The world a run lives in: the network (namespaces or loopback), moto's S3 server,
the meridian processes and their proxies. Everything it creates it removes again in
`close()`, which the runner calls on every exit path.

netns mode: a bridge in the root namespace (the host end, 10.213.X.1, serves S3 and the
clients), one namespace per node with a veth on the bridge (10.213.X.(10+i)); each node
dials its peers through a proxy inside its own namespace, so partitions are nftables
rules in the namespaces (drop what comes from a cut-off address) and the proxy adds
latency. loopback mode (no namespaces allowed): every address is 127.0.0.1, each node
on its own ports, and the proxies do the partitions too (see proxy.py).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from . import resp

SECRET = "jepsen-cluster-secret"
# One bucket per node: moto lists a prefix by walking the whole bucket, and a walk that
# meets a key another node deletes at that moment fails (HTTP 500, KeyError in moto);
# a node recovering while the others collect old segments could fail every retry.
BUCKET = "jepsen"


def bucket(i):
    return f"{BUCKET}-n{i}"
CLIENT_PORT = 6379  # netns mode: every node in its own namespace
REPL_PORT = 7379
PROXY_PORT_BASE = 17000  # netns mode: node i's proxy to node j listens on BASE + j
START_TIMEOUT_S = 60
PROXY_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proxy.py")


def run_cmd(args, check=True):
    result = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {result.stderr.strip()}")
    return result


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Netns:
    """Nodes in their own network namespaces on a bridge; partitions by nftables."""

    mode = "netns"

    def __init__(self, n):
        self.n = n
        self.tag = str(os.getpid() % 100000)
        self.bridge = f"mjbr{self.tag}"
        self.subnet = self._free_subnet()
        self.host_addr = f"10.213.{self.subnet}.1"
        self.created_ns = []
        self.bridge_up = False
        self.forward_rule = ["FORWARD", "-i", self.bridge, "-o", self.bridge, "-j", "ACCEPT"]
        self.forward_added = False

    @staticmethod
    def available():
        probe = f"mjprobe{os.getpid() % 100000}"
        if shutil.which("ip") is None or shutil.which("nft") is None or os.geteuid() != 0:
            return False
        if run_cmd(["ip", "netns", "add", probe], check=False).returncode != 0:
            return False
        ok = run_cmd(["ip", "netns", "exec", probe, "nft", "add", "table", "inet", "probe"], check=False).returncode == 0
        run_cmd(["ip", "netns", "del", probe], check=False)
        return ok

    @staticmethod
    def _free_subnet():
        routes = run_cmd(["ip", "-4", "route"], check=False).stdout
        for x in range(100 + os.getpid() % 100, 255):
            if f"10.213.{x}." not in routes:
                return x
        raise RuntimeError("no free 10.213.X.0/24 subnet")

    def ns(self, i):
        return f"mj{self.tag}n{i}"

    def node_addr(self, i):
        return f"10.213.{self.subnet}.{10 + i}"

    def setup(self):
        run_cmd(["ip", "link", "add", self.bridge, "type", "bridge"])
        self.bridge_up = True
        run_cmd(["ip", "addr", "add", f"{self.host_addr}/24", "dev", self.bridge])
        run_cmd(["ip", "link", "set", self.bridge, "up"])
        for i in range(1, self.n + 1):
            ns, veth = self.ns(i), f"mjv{self.tag}n{i}"
            run_cmd(["ip", "netns", "add", ns])
            self.created_ns.append(ns)
            run_cmd(["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns])
            run_cmd(["ip", "link", "set", veth, "master", self.bridge, "up"])
            inside = ["ip", "netns", "exec", ns]
            run_cmd(inside + ["ip", "addr", "add", f"{self.node_addr(i)}/24", "dev", "eth0"])
            run_cmd(inside + ["ip", "link", "set", "eth0", "up"])
            run_cmd(inside + ["ip", "link", "set", "lo", "up"])
            ruleset = "table inet jepsen {\n chain input { type filter hook input priority 0; policy accept; }\n}\n"
            subprocess.run(inside + ["nft", "-f", "-"], input=ruleset, text=True, check=True)
        # Docker sets the FORWARD policy to DROP, and bridged packets pass through it.
        if shutil.which("iptables") and run_cmd(["iptables", "-C"] + self.forward_rule, check=False).returncode != 0:
            self.forward_added = run_cmd(["iptables", "-I"] + self.forward_rule, check=False).returncode == 0

    def prefix(self, i):
        return ["ip", "netns", "exec", self.ns(i)]

    def client_endpoint(self, i):
        return self.node_addr(i), CLIENT_PORT

    def node_listen(self, i):
        return self.node_addr(i), CLIENT_PORT, REPL_PORT

    def proxy_links(self, i):
        """(proxies to start, peers node i dials): one proxy in node i's namespace."""
        links = [f"{i}-{j}:{PROXY_PORT_BASE + j}:{self.node_addr(j)}:{REPL_PORT}" for j in range(1, self.n + 1) if j != i]
        peers = [f"127.0.0.1:{PROXY_PORT_BASE + j}" for j in range(1, self.n + 1) if j != i]
        return links, peers

    def partition(self, cuts):
        """Drop every packet of each directed pair (a, b) in `cuts`; [] heals."""
        for b in range(1, self.n + 1):
            sources = sorted({self.node_addr(a) for a, bb in cuts if bb == b})
            rules = "flush chain inet jepsen input\n"
            if sources:
                rules += f"add rule inet jepsen input ip saddr {{ {', '.join(sources)} }} drop\n"
            subprocess.run(self.prefix(b) + ["nft", "-f", "-"], input=rules, text=True, check=True)

    def proxy_cuts(self, cuts):
        return []  # nftables does the cutting

    def close(self):
        for ns in self.created_ns:
            run_cmd(["ip", "netns", "del", ns], check=False)
        if self.bridge_up:
            run_cmd(["ip", "link", "del", self.bridge], check=False)
        if self.forward_added:
            run_cmd(["iptables", "-D"] + self.forward_rule, check=False)


class Loopback:
    """Every node on 127.0.0.1 with its own ports; the proxies do the partitions."""

    mode = "loopback"

    def __init__(self, n):
        self.n = n
        self.host_addr = "127.0.0.1"
        self.ports = {i: (free_port(), free_port()) for i in range(1, n + 1)}
        self.proxy_ports = {(i, j): free_port() for i in range(1, n + 1) for j in range(1, n + 1) if i != j}

    def setup(self):
        pass

    def prefix(self, i):
        return []

    def client_endpoint(self, i):
        return "127.0.0.1", self.ports[i][0]

    def node_listen(self, i):
        return ("127.0.0.1",) + self.ports[i]

    def proxy_links(self, i):
        links = [f"{i}-{j}:{self.proxy_ports[(i, j)]}:127.0.0.1:{self.ports[j][1]}" for j in range(1, self.n + 1) if j != i]
        peers = [f"127.0.0.1:{self.proxy_ports[(i, j)]}" for j in range(1, self.n + 1) if j != i]
        return links, peers

    def partition(self, cuts):
        pass  # the proxies' control file carries the cuts

    def proxy_cuts(self, cuts):
        return [f"{a}-{b}" for a, b in cuts]

    def close(self):
        pass


def moto_command():
    if shutil.which("moto_server"):
        return ["moto_server"]
    if run_cmd([sys.executable, "-c", "import moto.server"], check=False).returncode == 0:
        return [sys.executable, "-m", "moto.server"]
    return None


class Cluster:
    def __init__(self, net, binary, run_dir, planted_bug, log):
        self.net = net
        self.n = net.n
        self.binary = binary
        self.dir = run_dir
        self.planted_bug = planted_bug
        self.log = log
        self.nodes = {}  # i -> Popen
        self.proxies = []
        self.moto = None
        self.moto_port = None
        self.control_path = os.path.join(run_dir, "proxy-control.json")
        self.delay_ms = {}
        self.cut = []

    # --- S3 -----------------------------------------------------------------------
    def start_moto(self):
        command = moto_command()
        if command is None:
            raise RuntimeError("moto is not installed: pip install 'moto[server]'")
        self.moto_port = free_port() if self.net.mode == "loopback" else 9000
        out = open(os.path.join(self.dir, "moto.log"), "w")
        self.moto = subprocess.Popen(command + ["-H", self.net.host_addr, "-p", str(self.moto_port)], stdout=out, stderr=out,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        for i in range(1, self.n + 1):
            url = f"http://{self.net.host_addr}:{self.moto_port}/{bucket(i)}"
            while True:
                try:
                    urllib.request.urlopen(urllib.request.Request(url, method="PUT"), timeout=2).read()
                    break
                except OSError:
                    if self.moto.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("moto did not start (see moto.log)")
                    time.sleep(0.2)

    def s3_stop(self):
        self.moto.send_signal(signal.SIGSTOP)

    def s3_resume(self):
        self.moto.send_signal(signal.SIGCONT)

    # --- proxies ------------------------------------------------------------------
    def write_control(self):
        tmp = self.control_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"delay_ms": self.delay_ms, "cut": self.net.proxy_cuts(self.cut)}, f)
        os.replace(tmp, self.control_path)

    def set_delays(self, delay_ms):
        self.delay_ms = {f"{a}-{b}": ms for (a, b), ms in delay_ms.items()}
        self.write_control()

    def set_partition(self, cuts):
        self.cut = sorted(cuts)
        self.net.partition(self.cut)
        self.write_control()

    def start_proxies(self):
        self.write_control()
        groups = [(i, self.net.proxy_links(i)[0]) for i in range(1, self.n + 1)]
        if self.net.mode == "loopback":
            groups = [(0, [link for _, links in groups for link in links])]  # one process for all
        for i, links in groups:
            args = [sys.executable, PROXY_SCRIPT, "--control", self.control_path]
            for link in links:
                args += ["--link", link]
            prefix = self.net.prefix(i) if i else []
            out = open(os.path.join(self.dir, f"proxy-{i}.log"), "w")
            proc = subprocess.Popen(prefix + args, stdout=subprocess.PIPE, stderr=out, stdin=subprocess.DEVNULL, text=True)
            self.proxies.append(proc)
            if proc.stdout.readline().strip() != "proxy ready":
                raise RuntimeError(f"proxy {i} did not start (see proxy-{i}.log)")

    # --- nodes --------------------------------------------------------------------
    def node_env(self, clock_offset_ms):
        env = dict(os.environ)
        env.update({
            "AWS_ENDPOINT_URL": f"http://{self.net.host_addr}:{self.moto_port}",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "MERIDIAN_CLUSTER_SECRET": SECRET,
        })
        env.pop("MERIDIAN_PLANTED_BUG", None)
        env.pop("MERIDIAN_CLOCK_OFFSET_MS", None)
        if self.planted_bug:
            env["MERIDIAN_PLANTED_BUG"] = self.planted_bug
        if clock_offset_ms:
            env["MERIDIAN_CLOCK_OFFSET_MS"] = str(clock_offset_ms)
        return env

    def start_node(self, i, clock_offset_ms=0):
        """Start node i (again) and wait until it answers PING."""
        host, port, repl_port = self.net.node_listen(i)
        _, peers = self.net.proxy_links(i)
        args = [self.binary, "--bind", host, "--port", str(port), "--node-id", str(i), "--region", f"r{i}",
                "--shards", "2", "--object-store", f"s3://{bucket(i)}/n{i}", "--durability", "sync",
                "--flush-interval-ms", "100", "--repl-port", str(repl_port), "--peers", ",".join(peers),
                "--anti-entropy-interval-ms", "2000", "--log", "info"]
        out = open(os.path.join(self.dir, f"node-{i}.log"), "a")
        out.write(f"\n===== start at {time.time():.3f}, clock offset {clock_offset_ms} ms =====\n")
        out.flush()
        proc = subprocess.Popen(self.net.prefix(i) + args, stdout=out, stderr=out, stdin=subprocess.DEVNULL,
                                env=self.node_env(clock_offset_ms))
        self.nodes[i] = proc
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"node {i} exited with {proc.returncode} at start (see node-{i}.log)")
            if self.ping(i):
                return
            time.sleep(0.1)
        raise RuntimeError(f"node {i} did not answer within {START_TIMEOUT_S} s (see node-{i}.log)")

    def ping(self, i):
        try:
            c = resp.Client(*self.net.client_endpoint(i), timeout_s=1.0)
            try:
                return c.call("PING") == b"PONG"
            finally:
                c.close()
        except (OSError, resp.RespError):
            return False

    def kill(self, i):
        proc = self.nodes[i]
        proc.send_signal(signal.SIGCONT)  # a paused process dies too, but say so plainly
        proc.kill()
        proc.wait(timeout=10)

    def pause(self, i):
        self.nodes[i].send_signal(signal.SIGSTOP)

    def resume(self, i):
        self.nodes[i].send_signal(signal.SIGCONT)

    def info(self, i, section):
        c = resp.Client(*self.net.client_endpoint(i), timeout_s=5.0)
        try:
            return resp.info(c, section)
        finally:
            c.close()

    def close(self):
        procs = list(self.nodes.values()) + self.proxies + ([self.moto] if self.moto else [])
        for proc in procs:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGCONT)
                    proc.kill()
                except OSError:
                    pass
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.log(f"process {proc.pid} did not exit after SIGKILL")
        self.net.close()
