# Miss probability of TestBugModes/unknown-as-unavailable from per-seed.txt
# (rep seed caught): sweeps with all 50 seeds only.
import collections, math, sys
reps = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r, s, c = map(int, line.split())
    reps[r][s] = c
full = sorted(r for r in reps if len(reps[r]) == 50)
n = 50 * len(full)
k = sum(sum(reps[r].values()) for r in full)
p = k / n
lo = p - 1.96 * math.sqrt(p * (1 - p) / n)
print(f"sweeps {len(full)}, runs {n}, caught {k}: p = {p:.3f}, 95% lower bound {lo:.3f}")
print("seeds to detection per sweep:", [next(s for s in range(1, 51) if reps[r][s]) for r in full])
for N in (12, 20, 30, 40):
    pn = sum(reps[r][s] for r in full for s in range(1, N + 1)) / (N * len(full))
    print(f"N={N}: p over seeds 1..N {pn:.3f}, miss (1-p)^N {(1 - pn) ** N:.1e}, at the lower bound {(1 - lo) ** N:.1e}")
