#!/usr/bin/env python3
"""Writes the figures of a heat3d-vs-heat3d_mpi run (the .txt output of
xeon-2vcpu-heat3d-mpi-3.sh or -4.sh) as JSON next to it: per round, heat3d's time-loop ms per
step, heat3d_mpi's aggregate ms per step, their ratio, every tuning line and the --check line.
The numbers are read from the output as printed; nothing is measured here.

usage: heat3d-mpi-json.py RUN.txt > RUN.json
"""
import json
import re
import sys

rounds = []
current = None
for line in open(sys.argv[1]):
    m = re.match(r"### round (\d+): (heat3d_mpi|heat3d)", line)
    if m:
        if m.group(2) == "heat3d":
            current = {"round": int(m.group(1)), "tuning": []}
            rounds.append(current)
        continue
    if current is None:
        continue
    if m := re.match(r"time loop: .*?: ([0-9.]+) ms per step", line):
        current["one_process_2_threads_ms_per_step"] = float(m.group(1))
    elif m := re.match(r"aggregate: ([0-9.]+) GPts/s \(([0-9.]+) ms per step", line):
        current["two_ranks_1_thread_ms_per_step"] = float(m.group(2))
        current["two_ranks_gpts_per_s"] = float(m.group(1))
    elif m := re.match(r"halo exchange: .*?, ([0-9.]+)% of the run", line):
        current["exchange_share_percent"] = float(m.group(1))
    elif line.startswith("check:"):
        current["check"] = line.strip()
    if "tuning:" in line:
        current["tuning"].append(line[line.index("tuning:"):].strip())
for r in rounds:
    if "one_process_2_threads_ms_per_step" in r and "two_ranks_1_thread_ms_per_step" in r:
        r["ratio"] = round(
            r["two_ranks_1_thread_ms_per_step"] / r["one_process_2_threads_ms_per_step"], 3
        )
json.dump({"source": sys.argv[1], "grid": "256^3", "steps": 100, "rounds": rounds},
          sys.stdout, indent=2)
print()
