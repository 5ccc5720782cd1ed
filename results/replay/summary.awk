# Summarises `make replay-sweep` output: per scenario (in sweep order), how
# many (scenario, seed) runs replayed byte for byte and which differed.
/^SEED=/ { seed = substr($1, 6) }
/^scenario=/ { scenario = substr($0, 10) }
/^REPLAYED / {
	if (!(scenario in total)) order[++n] = scenario
	total[scenario]++
	if ($0 ~ /identical/) same[scenario]++
	else bad[scenario] = bad[scenario] " " seed
}
END {
	print "| scenario | runs | byte-identical | differing seeds |"
	print "|---|---|---|---|"
	for (i = 1; i <= n; i++) {
		s = order[i]
		printf "| %s | %d | %d | %s |\n", s, total[s], same[s] + 0, bad[s]
		all += total[s]; ok += same[s]
	}
	if (all > 0) printf "| **all** | %d | %d (%.1f %%) | |\n", all, ok, 100 * ok / all
}
