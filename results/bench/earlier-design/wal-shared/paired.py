"""Paired view of run.sh: for each shard count and workload, shared's
cycles/s (contended: hand-offs/s) over per-group's in the same repetition,
one ratio per repetition, sorted, with the median. Usage:
python3 results/bench/earlier-design/wal-shared/paired.py DIR"""
import json, os, re, sys, statistics
from collections import defaultdict

ops = {}  # (rep, shards, mode, workload) -> ops/s
d = sys.argv[1]
for name in os.listdir(d):
    m = re.match(r"shards(\d+)-(per-group|shared)-(\d+)$", name)
    p = os.path.join(d, name, "results.json")
    if not m or not os.path.exists(p):
        continue
    for r in json.load(open(p)):
        ops[(m.group(3), m.group(1), m.group(2), r["workload"])] = r["ops_per_sec"]

ratios = defaultdict(list)
for (rep, shards, mode, wl), v in ops.items():
    base = ops.get((rep, shards, "per-group", wl))
    if mode == "shared" and base:
        ratios[(shards, wl)].append(v / base)
print("| shards | workload | shared ÷ per-group, same repetition (sorted) | median |")
print("|--:|---|---|--:|")
for (shards, wl) in sorted(ratios):
    rs = sorted(ratios[(shards, wl)])
    print("| %s | %s | %s | %.2f |" % (shards, wl, " ".join("%.2f" % r for r in rs), statistics.median(rs)))
