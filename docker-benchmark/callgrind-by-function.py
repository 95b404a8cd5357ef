#!/usr/bin/env python3
"""Instructions per command, function by function: the difference of two callgrind runs.

`callgrind-per-op.sh` gives one figure per command: the difference of a run of N1
commands and a run of N2, divided by N2 - N1, so that start-up and connection set-up
cancel out. Kept with `KEEP_TMP=1`, the same two profiles split that figure by function.
Each function's self cost (what it executes itself, inlined code included) in the
longer run, less its self cost in the shorter, over N2 - N1. The rows add up to within
about 1 % of the script's figure (5,488 against 5,522 for a GET at pipeline depth 1),
which also leaves out the timer work.

    KEEP_TMP=1 PIPELINE=1 CLIENTS=50 N1=5000 N2=30000 docker-benchmark/callgrind-per-op.sh get
    docker-benchmark/callgrind-by-function.py /tmp/tmp.X/meridian-get-5000.out /tmp/tmp.X/meridian-get-30000.out 25000

Options: --top N (rows printed, default 60), --inclusive (inclusive costs instead; they
overlap, so they do not add up), --event E (another counted event than instructions,
e.g. D1mr or D1mw from a `CACHE_SIM=1 CACHE_EVENTS=D1mr,D1mw` run: which functions miss
the first-level data cache). Needs valgrind's callgrind_annotate.
"""

import argparse
import re
import subprocess

# "1,234 (12.3%)  file:function [object]" or, with a call count, "... function (12x) [object]".
ROW = re.compile(r"\s*([\d,]+) \([\s\d.]+%\)\s+(.*)")


def costs(profile, inclusive, event):
    """Each function's cost in `profile`, by name (file and object left out)."""
    command = ["callgrind_annotate", "--auto=no", "--threshold=100"]
    if event:
        command.append(f"--show={event}")
    if inclusive:
        command.append("--inclusive=yes")
    out = subprocess.run(command + [profile], capture_output=True, text=True, check=True).stdout
    by_name = {}
    for line in out.splitlines():
        match = ROW.match(line)
        if not match or "PROGRAM TOTALS" in line:
            continue
        name = re.sub(r" \[.*\]$", "", match.group(2))
        name = re.sub(r" \([\d,]+x\)$", "", name)
        name = name.split(":", 1)[1] if ":" in name else name
        by_name[name] = by_name.get(name, 0) + int(match.group(1).replace(",", ""))
    return by_name


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shorter", help="the N1 run's callgrind output")
    parser.add_argument("longer", help="the N2 run's callgrind output")
    parser.add_argument("commands", type=float, help="N2 - N1")
    parser.add_argument("--top", type=int, default=60)
    parser.add_argument("--inclusive", action="store_true")
    parser.add_argument("--event", help="count this event instead of instructions (Ir)")
    opts = parser.parse_args()
    shorter = costs(opts.shorter, opts.inclusive, opts.event)
    longer = costs(opts.longer, opts.inclusive, opts.event)
    rows = sorted(((longer.get(n, 0) - shorter.get(n, 0)) / opts.commands, n) for n in set(shorter) | set(longer))
    rows.reverse()
    for per_command, name in rows[: opts.top]:
        print(f"{per_command:9.1f}  {name[:150]}")
    if not opts.inclusive:
        print(f"{sum(c for c, _ in rows):9.1f}  (all functions)")


if __name__ == "__main__":
    main()
