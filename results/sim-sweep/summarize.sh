#!/bin/sh
# Counts of summary.md from the raw sweep output beside it: per commit swept, the runs, every run
# not as expected (seed, scenario) and every seed with fewer than 20 runs (a process that died, or
# the last seed of a sweep stopped by hand). The finding each failure led to is written by hand.
# Usage, from the repository root: sh results/sim-sweep/summarize.sh [results/sim-sweep]
dir=${1:-results/sim-sweep}
for c in $(ls "$dir"/*-odd.txt.gz | sed 's|.*/||; s|-odd.txt.gz||'); do
	zcat "$dir/$c-odd.txt.gz" "$dir/$c-even.txt.gz" | awk -v c="$c" '
		/^SEED=/        { seed = substr($0, 6) }
		/^scenario=/    { sc = substr($0, 10) }
		/^(PASSED|UNEXPECTED)/ { runs++; per[seed]++ }
		/^UNEXPECTED/   { bad++; list = list sprintf("\n  not as expected: seed %s %s", seed, sc) }
		END {
			printf "%s: %d runs, %d not as expected%s\n", c, runs, bad, list
			for (s in per) if (per[s] < 20) printf "  seed %s: %d of 20 runs\n", s, per[s]
		}'
done
