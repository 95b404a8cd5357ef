#!/usr/bin/env python3
"""Where a counted event happens, instruction by instruction, with the inlined call chain.

`callgrind-by-function.py` splits a figure by function, but in an optimised build most
of the code a function runs is inlined from elsewhere (a `Vec` push, a `ptr::write`,
a `SmallVec` collect), so "the connection loop misses the cache 3 times a request"
does not say which line does it. This reads a profile taken with `--dump-instr=yes`
and prints the instructions that cost the most of one event, each with the chain of
source lines it was inlined through (`addr2line -i`), innermost first; with `--calls F`,
the call sites of functions whose name contains F instead, with the event's cost
inside the call (e.g. which `memcpy` calls miss). The figures are the profile's
totals, not per command: take a run long enough that start-up does not matter, or
compare two runs.

    valgrind --tool=callgrind --cache-sim=yes --dump-instr=yes --callgrind-out-file=m.out \\
        target/release/meridian --port 7401 --shards 1 --data-dir /tmp/d &
    redis-benchmark -p 7401 -t lpush -n 60000 -P 16 -c 50 -d 64 -q
    callgrind_control -i off $!; kill $!
    docker-benchmark/callgrind-by-instruction.py m.out target/release/meridian --event D1mw --top 20
    docker-benchmark/callgrind-by-instruction.py m.out target/release/meridian --event D1mw --calls memcpy

Addresses in shared libraries (libc's `memcpy`) print as `??`: name them with --calls.
What the first-level cache figures leave out (docs/benchmarks.md, fifty-sixth session):
callgrind models neither prefetch instructions nor the kernel's copies into a read
buffer, so a miss it counts after a software prefetch, or on bytes just read from a
socket, may cost nothing on the machine.
"""

import argparse
import collections
import re
import subprocess


def position(token, last):
    """A compressed callgrind position: absolute, +n / -n from the last, or * (same)."""
    if token == "*":
        return last
    if token[0] == "+":
        return last + int(token[1:], 0)
    if token[0] == "-":
        return last - int(token[1:], 0)
    return int(token, 0)


def costs(profile, event, calls_to):
    """The event's cost by instruction address: of the instructions themselves or, with
    `calls_to`, of calls (inclusive) to functions whose name contains it, by call site."""
    by_address = collections.Counter()
    names = {}
    column = None
    callee = None
    call_line_next = False
    last = [0, 0]
    with open(profile) as lines:
        for line in lines:
            line = line.rstrip("\n")
            if line.startswith("events:"):
                events = line.split()[1:]
                if event not in events:
                    raise SystemExit(f"{profile} counts {' '.join(events)}, not {event}")
                column = 2 + events.index(event)
                continue
            if not line:
                continue
            if line[0].isdigit() or line[0] in "+-*":
                parts = line.split()
                last = [position(parts[0], last[0]), position(parts[1], last[1])]
                is_call = call_line_next
                call_line_next = False
                if len(parts) <= column:
                    continue
                if calls_to is None and not is_call:
                    by_address[last[0]] += int(parts[column])
                elif calls_to is not None and is_call and callee and calls_to in callee:
                    by_address[last[0]] += int(parts[column])
                continue
            if line.startswith("calls="):
                call_line_next = True
            elif line.startswith(("cfn=", "fn=")):
                match = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
                name = line.split("=", 1)[1]
                if match:
                    if match.group(2):
                        names[match.group(1)] = match.group(2)
                    name = names.get(match.group(1), "")
                if line.startswith("cfn="):
                    callee = name
    if column is None:
        raise SystemExit(f"{profile}: no events line")
    return by_address


def inline_chain(binary, address):
    """Source lines `address` was inlined through, innermost first (file:line each)."""
    out = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", binary, hex(address)], capture_output=True, text=True).stdout
    lines = out.strip().splitlines()
    return [lines[i + 1].rsplit("/", 1)[-1] for i in range(0, len(lines) - 1, 2)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="callgrind output taken with --dump-instr=yes")
    parser.add_argument("binary", help="the profiled binary (for addr2line)")
    parser.add_argument("--event", default="Ir", help="Ir (default), D1mr, D1mw, ...")
    parser.add_argument("--calls", help="call sites of functions whose name contains this")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--depth", type=int, default=7, help="inlined frames shown per row")
    opts = parser.parse_args()
    by_address = costs(opts.profile, opts.event, opts.calls)
    total = sum(by_address.values())
    print(f"{total:,} {opts.event}" + (f" inside calls to *{opts.calls}*" if opts.calls else ""))
    for address, cost in by_address.most_common(opts.top):
        chain = " <- ".join(inline_chain(opts.binary, address)[: opts.depth])
        print(f"{cost:10,} {cost / max(total, 1):6.1%}  {address:#x}  {chain}")


if __name__ == "__main__":
    main()
