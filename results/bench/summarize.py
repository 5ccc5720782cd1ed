"""Summarise knobs.sh / targets.sh runs: per run name (config-route) and
workload, the range (min-max over repetitions) of cycles/s (contended: hand-offs/s),
the ratio to etcd's figure of the same repetition and workload, acquire p50/p99
and the host's load. Usage: python3 results/bench/summarize.py DIR"""
import json, os, re, sys
from collections import defaultdict

d = sys.argv[1]
runs = defaultdict(list)  # (name, workload) -> [(rep, row)]
etcd = {}                 # (rep, workload) -> ops/s
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name, "results.json")
    if not os.path.exists(p):
        continue
    m = re.match(r"(.+)-(\d+)$", name)
    key, rep = m.group(1), m.group(2)
    for r in json.load(open(p)):
        if key == "etcd":
            etcd[(rep, r["workload"])] = r["ops_per_sec"]
        runs[(key, r["workload"])].append((rep, r))

def rng(vals, fmt):
    if not vals:
        return "–"
    lo, hi = fmt % min(vals), fmt % max(vals)
    return lo if lo == hi else lo + "–" + hi

print("| run | workload | cycles/s | × etcd (same rep) | acq p50 ms | acq p99 ms | load | reps |")
print("|---|---|--:|--:|--:|--:|--:|--:|")
for (key, wl) in sorted(runs, key=lambda k: (k[1], k[0] == "etcd", k[0].rsplit("-", 1)[-1], k[0])):
    rs = runs[(key, wl)]
    ratio = [r["ops_per_sec"] / etcd[(rep, wl)] for rep, r in rs if (rep, wl) in etcd and key != "etcd"]
    print("| %s | %s | %s | %s | %s | %s | %s | %d |" % (
        key, wl, rng([r["ops_per_sec"] for _, r in rs], "%.0f"), rng(ratio, "%.2f") if key != "etcd" else "1",
        rng([r["acquire"]["p50_ms"] for _, r in rs], "%.2f"),
        rng([r["acquire"]["p99_ms"] for _, r in rs], "%.1f"),
        rng([r.get("host_load1", 0) for _, r in rs], "%.0f"), len(rs)))
