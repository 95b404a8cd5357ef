"""The nemesis: a seeded schedule of faults, up to ACTIVE_MAX at once, each healed after
its own duration, and everything healed at the end.

  partition-isolate  one node cut off from all the others, both ways
  partition-halves   the nodes split into two random halves
  partition-oneway   packets from one node to another dropped, the reverse kept
  latency            every peer link delayed (a different delay per direction)
  kill               SIGKILL a node; restart it from S3 when the fault heals
  restart            SIGKILL a node and restart it at once (the peers barely notice)
  pause              SIGSTOP a node; SIGCONT when the fault heals
  s3-outage          SIGSTOP moto's S3 server (nothing stored, nothing lost); SIGCONT
  clock              restart a node with its clock shifted by up to ±10 s
                     (MERIDIAN_CLOCK_OFFSET_MS); the heal restarts it on the true time,
                     so its wall clock jumps back and the HLC must not

The seed fixes the sequence of faults, their targets and durations; where in the
stream of operations they land depends on the machine's timing.
"""

import collections
import random
import threading
import time

ACTIVE_MAX = 2
GAP_S = (1.0, 4.0)  # between two fault starts: some quiet time too
DURATION_S = (2.0, 8.0)
DELAY_MS = (20, 400)
CLOCK_OFFSET_MS = (500, 10_000)
KINDS = ["partition-isolate", "partition-halves", "partition-oneway", "latency", "kill", "restart", "pause", "s3-outage",
         "clock"]
NODE_FAULTS = ("kill", "restart", "pause", "clock")


class Nemesis(threading.Thread):
    def __init__(self, cluster, history, seed, stop_at, log, kinds=KINDS):
        super().__init__(daemon=True, name="nemesis")
        self.kinds = [k for k in KINDS if k in kinds]
        self.cluster = cluster
        self.history = history
        self.rng = random.Random(seed)
        self.stop_at = stop_at
        self.log = log
        self.active = []  # (heal_at, kind, target)
        self.counts = collections.Counter()
        self.error = None

    def run(self):
        try:
            while time.monotonic() < self.stop_at:
                self.heal_due(time.monotonic())
                if len(self.active) < ACTIVE_MAX:
                    self.start_one()
                time.sleep(self.rng.uniform(*GAP_S))
            self.heal_due(float("inf"))
        except Exception as e:  # reported by the runner as a harness error
            self.error = f"{type(e).__name__}: {e}"
            self.log(f"nemesis stopped: {self.error}")

    def heal_all(self):
        """Heal whatever is still active (also on the runner's way out)."""
        self.heal_due(float("inf"))

    def allowed(self):
        kinds = {k for _, k, _ in self.active}
        busy_nodes = {t for _, k, t in self.active if k in NODE_FAULTS}
        ok = []
        for kind in self.kinds:
            if kind.startswith("partition") and any(k.startswith("partition") for k in kinds):
                continue
            if kind in ("latency", "s3-outage") and kind in kinds:
                continue
            # A restart reads S3: no kill or clock fault during an outage, nor the reverse.
            if kind in ("kill", "restart", "clock") and "s3-outage" in kinds:
                continue
            if kind == "s3-outage" and ({"kill", "restart", "clock"} & kinds):
                continue
            if kind in NODE_FAULTS and len(busy_nodes) >= self.cluster.n - 1:
                continue
            ok.append(kind)
        return ok, busy_nodes

    def start_one(self):
        rng, c, n = self.rng, self.cluster, self.cluster.n
        kinds, busy = self.allowed()
        if not kinds:
            return
        kind = rng.choice(kinds)
        duration = rng.uniform(*DURATION_S)
        nodes = list(range(1, n + 1))
        target = None
        if kind == "partition-isolate":
            lone = rng.choice(nodes)
            target = sorted({(lone, o) for o in nodes if o != lone} | {(o, lone) for o in nodes if o != lone})
            c.set_partition(target)
        elif kind == "partition-halves":
            rng.shuffle(nodes)
            half = rng.randint(1, n // 2)
            a, b = nodes[:half], nodes[half:]
            target = sorted({(x, y) for x in a for y in b} | {(y, x) for x in a for y in b})
            c.set_partition(target)
        elif kind == "partition-oneway":
            src, dst = rng.sample(nodes, 2)
            target = [(src, dst)]
            c.set_partition(target)
        elif kind == "latency":
            target = {(a, b): rng.randint(*DELAY_MS) for a in nodes for b in nodes if a != b}
            c.set_delays(target)
        elif kind == "s3-outage":
            c.s3_stop()
        else:
            target = rng.choice([i for i in nodes if i not in busy])
            if kind == "kill":
                c.kill(target)
            elif kind == "restart":
                c.kill(target)
                c.start_node(target)
                duration = 0.0
            elif kind == "pause":
                c.pause(target)
            elif kind == "clock":
                offset_ms = rng.choice([-1, 1]) * rng.randint(*CLOCK_OFFSET_MS)
                c.kill(target)
                c.start_node(target, clock_offset_ms=offset_ms)
                kind_value = (target, offset_ms)
        self.counts[kind] += 1
        value = kind_value if kind == "clock" else describe(target)
        self.history.add("nemesis", "info", f"start-{kind}", None, value)
        self.log(f"nemesis: start {kind} {value} for {duration:.1f} s")
        self.active.append((time.monotonic() + duration, kind, target))

    def heal_due(self, now):
        c = self.cluster
        keep = []
        for heal_at, kind, target in self.active:
            if heal_at > now:
                keep.append((heal_at, kind, target))
                continue
            if kind.startswith("partition"):
                c.set_partition([])
            elif kind == "latency":
                c.set_delays({})
            elif kind == "s3-outage":
                c.s3_resume()
            elif kind == "pause":
                c.resume(target)
            elif kind == "kill":
                c.start_node(target)
            elif kind == "clock":
                c.kill(target)
                c.start_node(target)
            self.history.add("nemesis", "info", f"stop-{kind}", None, describe(target))
            self.log(f"nemesis: heal {kind} {describe(target)}")
        self.active = keep


def describe(target):
    if isinstance(target, dict):
        return {f"{a}-{b}": ms for (a, b), ms in target.items()}
    if isinstance(target, list):
        return [f"{a}-{b}" for a, b in target]
    return target
