"""Paired view of knobs.sh runs: for each configuration and route, its
cycles/s over the base configuration's in the same repetition (and route),
one ratio per repetition, sorted, with the median. Usage:
python3 results/bench/earlier-design/knobs/paired.py DIR [DIR...]"""
import json, os, re, sys, statistics
from collections import defaultdict

ops = {}  # (dir, rep, config, route) -> ops/s
for d in sys.argv[1:]:
    for name in os.listdir(d):
        m = re.match(r"(.+)-(spread|leader)-(\d+)$", name)
        p = os.path.join(d, name, "results.json")
        if not m or not os.path.exists(p):
            continue
        r = next(x for x in json.load(open(p)) if x["workload"] == "uncontended")
        ops[(d, m.group(3), m.group(1), m.group(2))] = r["ops_per_sec"]

ratios = defaultdict(list)
for (d, rep, cfg, route), v in ops.items():
    base = ops.get((d, rep, "base", route))
    if cfg != "base" and base:
        ratios[(cfg, route)].append(v / base)
print("| config | route | ÷ base, same repetition (sorted) | median |")
print("|---|---|---|--:|")
for (cfg, route) in sorted(ratios):
    rs = sorted(ratios[(cfg, route)])
    print("| %s | %s | %s | %.2f |" % (cfg, route, " ".join("%.2f" % r for r in rs), statistics.median(rs)))
