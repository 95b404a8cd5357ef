"""The clients and the history they record.

Each client is a thread bound to one node, doing one operation at a time over RESP:
INCRBY on counters, SET of a value never written before on registers, SADD of a fresh
element and SREM of one it added on sets, DEL of keys written (and converged) before
the faults began. Every operation is an `invoke` entry followed by exactly one of
  ok    the node answered and the operation took effect
  fail  it certainly did not take effect (never sent: no connection; or refused with
        -LOADING, which a recovering node answers before it runs anything)
  info  unknown: a timeout, a closed connection or an error reply (a write refused
        after being applied in memory, or while waiting for the store, may still
        replicate), so the checkers allow both outcomes
with the seconds since the run began. The history is written as JSON lines.
"""

import json
import random
import threading
import time

from . import resp

COUNTER_KEYS = 4
REGISTER_KEYS = 4
SET_KEYS = 4
OP_TIMEOUT_S = 2.0
LOADING_BACKOFF_S = 0.05  # between tries while a node answers -LOADING
# Pause between two operations of one client: keeps a 2-core machine responsive.
THINK_S = (0.004, 0.012)
DOWN_BACKOFF_S = 0.1
HISTORY_ENTRIES_MAX = 5_000_000


class History:
    def __init__(self, t0):
        self.t0 = t0
        self.entries = []
        self.lock = threading.Lock()

    def add(self, process, type_, f, key, value, node=None, error=None):
        entry = {"process": process, "type": type_, "f": f, "key": key, "value": value,
                 "node": node, "time": round(time.monotonic() - self.t0, 6)}
        if error:
            entry["error"] = error
        with self.lock:
            assert len(self.entries) < HISTORY_ENTRIES_MAX, "history bound"
            self.entries.append(entry)

    def write(self, path):
        with open(path, "w") as f:
            for entry in self.entries:
                f.write(json.dumps(entry) + "\n")


class DeletePool:
    """Keys written before the faults; each DEL takes one, paced so the pool lasts."""

    def __init__(self, keys, start, seconds):
        self.keys = list(keys)
        self.start = start
        self.seconds = seconds
        self.taken = 0
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            due = len(self.keys) * min(1.0, (time.monotonic() - self.start) / self.seconds)
            if self.taken >= len(self.keys) or self.taken >= due:
                return None
            key = self.keys[self.taken]
            self.taken += 1
            return key


class Client(threading.Thread):
    def __init__(self, process, node, endpoint, history, deletes, seed, stop_at):
        super().__init__(daemon=True, name=f"client-{process}")
        self.process = process
        self.node = node
        self.endpoint = endpoint
        self.history = history
        self.deletes = deletes
        self.rng = random.Random(seed)
        self.stop_at = stop_at
        self.conn = None
        self.seq = 0
        self.added = []  # (set key, element) this client added, not yet removed

    def run(self):
        while time.monotonic() < self.stop_at:
            self.step()
            # A node that is down refuses at once: don't spin on it.
            time.sleep(self.rng.uniform(*THINK_S) if self.conn else DOWN_BACKOFF_S)
        if self.conn:
            self.conn.close()

    def step(self):
        rng = self.rng
        self.seq += 1
        unique = f"{self.process}-{self.seq}"
        roll = rng.random()
        if roll < 0.10:
            key = self.deletes.take()
            if key is not None:
                self.op("del", key, None, ("DEL", key))
                return
        if roll < 0.40:
            key, by = f"ctr:{rng.randrange(COUNTER_KEYS)}", rng.randint(1, 9)
            self.op("incr", key, by, ("INCRBY", key, by))
        elif roll < 0.65:
            key = f"reg:{rng.randrange(REGISTER_KEYS)}"
            self.op("set", key, unique, ("SET", key, unique))
        elif roll < 0.88 or not self.added:
            key = f"set:{rng.randrange(SET_KEYS)}"
            if self.op("sadd", key, unique, ("SADD", key, unique)) is not None:
                self.added.append((key, unique))
        else:
            key, element = self.added.pop(rng.randrange(len(self.added)))
            self.op("srem", key, element, ("SREM", key, element))

    def op(self, f, key, value, command):
        """Run one operation, recording invoke and its completion; the reply if ok."""
        self.history.add(self.process, "invoke", f, key, value, self.node)
        if self.conn is None:
            try:
                self.conn = resp.Client(*self.endpoint, timeout_s=OP_TIMEOUT_S)
            except OSError as e:
                self.history.add(self.process, "fail", f, key, value, self.node, error=f"connect: {e}")
                return None
        try:
            reply = self.conn.call(*command)
        except resp.RespError as e:
            if str(e).startswith("LOADING"):
                # The node is recovering and ran nothing: certainly not applied. Wait a
                # little instead of spinning on it (it answers at once).
                self.history.add(self.process, "fail", f, key, value, self.node, error=str(e))
                time.sleep(LOADING_BACKOFF_S)
                return None
            self.history.add(self.process, "info", f, key, value, self.node, error=str(e))
            return None
        except OSError as e:
            self.conn.close()
            self.conn = None
            self.history.add(self.process, "info", f, key, value, self.node, error=f"{type(e).__name__}: {e}")
            return None
        entry_value = value
        if f in ("srem", "del"):
            entry_value = [value, reply]  # how many it removed: 1 means it saw the element
        self.history.add(self.process, "ok", f, key, entry_value, self.node)
        return reply
