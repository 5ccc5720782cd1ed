#!/usr/bin/env python3
"""For saved locksim runs: each group's log-time steps against virtual time
(entries.json), its lead over virtual time at the stability point (last
fault end + RecoveryBound), and the entry each violation names.
Usage: logsteps.py [-recovery SECONDS] RUN_DIR...  (gzipped files are read too)"""
import gzip, json, os, sys

def load(d, name):
    p = os.path.join(d, name)
    if os.path.exists(p + '.gz'):
        return json.load(gzip.open(p + '.gz'))
    return json.load(open(p))

args = sys.argv[1:]
recovery = 5.0
if args[:1] == ['-recovery']:
    recovery, args = float(args[1]), args[2:]
for d in args:
    entries, faults, trace = load(d, 'entries.json'), load(d, 'faults.json'), load(d, 'trace.json')
    verdict = json.load(open(os.path.join(d, 'verdict.json')))
    last = max(faults, key=lambda f: f['end'])
    stable = last['end'] + recovery * 1e9
    print(f"{d}: verdict {verdict['verdict']}, last fault {last['name']} {last.get('target', '')} "
          f"ends {last['end']/1e9:.3f}s, stable {stable/1e9:.3f}s")
    groups = {}
    for e in entries:
        groups.setdefault(e.get('group', 0), []).append(e)
    for g, es in sorted(groups.items()):
        es.sort(key=lambda e: e['index'])
        steps = [f"{((b['log_time']-a['log_time'])-(b['at']-a['at']))/1e9:+.2f}s@{b['at']/1e9:.2f}s"
                 for a, b in zip(es, es[1:])
                 if abs((b['log_time']-a['log_time'])-(b['at']-a['at'])) > 0.3e9]
        before = [e for e in es if e['at'] <= stable]
        lead = (before[-1]['log_time'] - before[-1]['at'])/1e9 if before else float('nan')
        print(f"  group {g}: log-time steps (virtual at) {' '.join(steps) or '-'}; "
              f"lead over virtual at stability {lead:+.2f}s")
    group_of = {t['resource']: t.get('group', 0) for t in trace}
    at = {(e.get('group', 0), e['index']): e for e in entries}
    named = {}
    for v in verdict.get('violations') or []:
        key = (group_of.get(v.get('resource')), v.get('index'))
        named[key] = named.get(key, 0) + 1
    for (g, i), n in sorted(named.items(), key=str):
        e = at.get((g, i))
        where = f"virtual {e['at']/1e9:.3f}s, log {e['log_time']/1e9:.3f}s" if e else "?"
        print(f"  {n} violation(s) at group {g} index {i}: {where}")
