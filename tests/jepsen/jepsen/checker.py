"""What must hold once every fault is healed and the nodes have converged.

Each checker reads the history and the final state every node reported (`finals[i]`:
key -> value as read from node i) and returns (name, ok, line); a violation's line
names the keys and values that break it.

  merkle     every node reports the same Merkle root (INFO keyspace_digest)
  converged  every node reads the same value for every key the workload touched
  counter    each counter equals the acknowledged increments plus some subset of the
             indeterminate ones (failed ones never count)
  register   each register holds a value that some SET wrote (acknowledged or not),
             and is not empty if a SET was acknowledged
  set        each set holds only elements some SADD wrote; every acknowledged add is
             there unless an SREM of it was tried; an element that an acknowledged
             SREM removed (reply 1: it saw the only add) is gone
  delete     no key that an acknowledged DEL removed (reply 1) after the converged
             start comes back
"""

import collections

SHOW_MAX = 5  # examples printed per violation


def check_all(history, finals, merkle):
    return [
        merkle,
        check_converged(finals),
        check_counters(history, finals),
        check_registers(history, finals),
        check_sets(history, finals),
        check_deletes(history, finals),
    ]


def completions(history):
    """(f, key, value, type) of every completed client operation, invoke's value kept."""
    invokes = {}
    out = []
    for e in history:
        if e["process"] in ("nemesis", "setup"):
            continue  # faults, and the writes made before them (the delete checker's keys)
        if e["type"] == "invoke":
            invokes[e["process"]] = e
        else:
            inv = invokes.pop(e["process"])
            out.append((inv["f"], inv["key"], inv["value"], e["type"], e["value"]))
    return out


def final_value(finals, key):
    return finals[min(finals)].get(key)


def check_converged(finals):
    nodes = sorted(finals)
    keys = sorted(set().union(*(f.keys() for f in finals.values())))
    differ = [k for k in keys if len({repr(finals[i].get(k)) for i in nodes}) > 1]
    if differ:
        shown = "; ".join(f"{k}: " + ", ".join(f"n{i}={finals[i].get(k)!r}" for i in nodes) for k in differ[:SHOW_MAX])
        return ("converged", False, f"{len(differ)} of {len(keys)} keys differ between nodes: {shown}")
    return ("converged", True, f"{len(keys)} keys read the same on all {len(nodes)} nodes")


def check_counters(history, finals):
    by_key = collections.defaultdict(lambda: {"ok": 0, "info": []})
    for f, key, value, type_, _ in completions(history):
        if f == "incr" and type_ == "ok":
            by_key[key]["ok"] += value
        elif f == "incr" and type_ == "info":
            by_key[key]["info"].append(value)
    bad = []
    for key, acc in sorted(by_key.items()):
        raw = final_value(finals, key)
        got = int(raw) if raw is not None else 0
        # Bit s of `reachable` set: some subset of the indeterminate increments sums to s.
        reachable = 1
        for by in acc["info"]:
            reachable |= reachable << by
        extra = got - acc["ok"]
        if extra < 0 or not (reachable >> extra) & 1:
            bad.append(f"{key}={got}, acknowledged {acc['ok']}, indeterminate {sum(acc['info'])} in {len(acc['info'])}")
    oks = sum(1 for f, _, _, t, _ in completions(history) if f == "incr" and t == "ok")
    if bad:
        return ("counter", False, f"{len(bad)} counters off: " + "; ".join(bad[:SHOW_MAX]))
    infos = sum(len(a["info"]) for a in by_key.values())
    return ("counter", True, f"{len(by_key)} counters = acknowledged sum ({oks} increments) + a subset of {infos} indeterminate")


def check_registers(history, finals):
    written = collections.defaultdict(set)
    acked = collections.defaultdict(int)
    for f, key, value, type_, _ in completions(history):
        if f == "set" and key.startswith("reg:") and type_ in ("ok", "info"):
            written[key].add(value)
            acked[key] += type_ == "ok"
    bad = []
    for key in sorted(written):
        got = final_value(finals, key)
        got = got.decode() if got is not None else None
        if got is None and acked[key]:
            bad.append(f"{key} is empty after {acked[key]} acknowledged SETs")
        elif got is not None and got not in written[key]:
            bad.append(f"{key}={got!r} was never written")
    if bad:
        return ("register", False, f"{len(bad)} registers wrong: " + "; ".join(bad[:SHOW_MAX]))
    return ("register", True, f"{len(written)} registers hold a written value ({sum(acked.values())} acknowledged SETs)")


def check_sets(history, finals):
    tried = collections.defaultdict(set)     # every SADD element, whatever its outcome
    acked = collections.defaultdict(set)     # acknowledged SADDs
    srem_tried = collections.defaultdict(set)
    removed = collections.defaultdict(set)   # acknowledged SREM that answered 1
    for f, key, value, type_, result in completions(history):
        if f == "sadd" and type_ != "fail":
            tried[key].add(value)
            if type_ == "ok":
                acked[key].add(value)
        elif f == "srem" and type_ != "fail":
            srem_tried[key].add(value)
            if type_ == "ok" and result[1] == 1:
                removed[key].add(value)
    bad = []
    for key in sorted(set(tried) | set(finals[min(finals)])):
        if not key.startswith("set:"):
            continue
        members = {m.decode() for m in (final_value(finals, key) or [])}
        lost = acked[key] - srem_tried[key] - members
        phantom = members - tried[key]
        revived = removed[key] & members
        for what, elems in (("acknowledged adds missing", lost), ("never added", phantom), ("removed but present", revived)):
            if elems:
                bad.append(f"{key}: {len(elems)} {what} (e.g. {sorted(elems)[:3]})")
    if bad:
        return ("set", False, f"{len(bad)} set violations: " + "; ".join(bad[:SHOW_MAX]))
    total = sum(len(v) for v in acked.values())
    gone = sum(len(v) for v in removed.values())
    return ("set", True, f"{len(tried)} sets: all {total} acknowledged adds present unless removed, {gone} observed removes stay removed")


def check_deletes(history, finals):
    deleted = set()
    for f, key, _, type_, result in completions(history):
        if f == "del" and type_ == "ok" and result[1] == 1:
            deleted.add(key)
    back = sorted(k for k in deleted if final_value(finals, k) is not None)
    if back:
        shown = ", ".join(f"{k}={final_value(finals, k)!r}" for k in back[:SHOW_MAX])
        return ("delete", False, f"{len(back)} of {len(deleted)} deleted keys came back: {shown}")
    return ("delete", True, f"{len(deleted)} keys deleted after a converged state stay deleted")
