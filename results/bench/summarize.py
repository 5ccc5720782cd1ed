"""Summarise a directory of lockbench runs named NAME-REP (request-path/run.sh,
targets.sh, knobs.sh): per run name (binary-shards-route, bare, etcd) and workload,
the range over repetitions (min-max) of cycles/s (contended: hand-offs/s),
the machine's CPU per cycle (µs, /proc/stat over the window, load generator
included; runs from before lockbench measured it show "–") and its ratio to
the bare server's in the same repetition, the
throughput ratio to etcd's in the same repetition, acquire p50/p99, and for
contended runs the grants out of FIFO order and Jain's index, and the
host's 1-minute load after each run.
Usage: python3 results/bench/summarize.py DIR"""
import json, os, re, sys
from collections import defaultdict

d = sys.argv[1]
runs = defaultdict(list)  # (name, workload) -> [(rep, row)]
peer = {}                 # (name, rep, workload) -> row, for bare and etcd
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name, "results.json")
    if not os.path.exists(p):
        continue
    m = re.match(r"(.+)-(\d+)$", name)
    key, rep = m.group(1), m.group(2)
    for r in json.load(open(p)):
        if key in ("bare", "etcd"):
            peer[(key, rep, r["workload"])] = r
        runs[(key, r["workload"])].append((rep, r))

def rng(vals, fmt):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "–"
    lo, hi = fmt % min(vals), fmt % max(vals)
    return lo if lo == hi else lo + "–" + hi

def cpu(r):
    c = r.get("machine_cpu")
    return c["per_cycle_us"] if c else None

def ratio(rs, wl, other, f):
    out = []
    for rep, r in rs:
        p = peer.get((other, rep, wl))
        if p and f(p) and f(r) is not None:
            out.append(f(r) / f(p))
    return out

print("| run | workload | cycles/s | CPU µs/cycle | CPU × bare | cycles × etcd | acq p50 ms | acq p99 ms | CPU busy | out of order | Jain | load | reps |")
print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
order = lambda k: (k[1], k[0] not in ("bare", "etcd"), k[0])
for (key, wl) in sorted(runs, key=order):
    rs = runs[(key, wl)]
    print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |" % (
        key, wl, rng([r["ops_per_sec"] for _, r in rs], "%.0f"),
        rng([cpu(r) for _, r in rs], "%.0f"),
        rng(ratio(rs, wl, "bare", cpu), "%.2f"),
        rng(ratio(rs, wl, "etcd", lambda x: x["ops_per_sec"]), "%.2f"),
        rng([r["acquire"]["p50_ms"] for _, r in rs], "%.2f"),
        rng([r["acquire"]["p99_ms"] for _, r in rs], "%.1f"),
        rng([100 * r["machine_cpu"]["utilisation"] for _, r in rs if r.get("machine_cpu")], "%.0f%%"),
        rng([100 * r["fairness"]["out_of_order_frac"] for _, r in rs if r.get("fairness")], "%.1f%%"),
        rng([r["fairness"]["jain"] for _, r in rs if r.get("fairness")], "%.3f"),
        rng([r.get("host_load1") for _, r in rs], "%.0f"),
        len(rs)))
