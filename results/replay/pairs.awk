# pairs.txt from every sweep*.txt of this folder: each (scenario, seed <= 50) replayed
# byte-identical, with how many sweeps did. Usage, from the repository root:
#   awk -f results/replay/pairs.awk results/replay/sweep*.txt > results/replay/pairs.txt
BEGIN { print "# (scenario, seed) pairs replayed byte-identical, from every results/replay/sweep*.txt (seeds <= 50; one line per pair, with how many times)" }
/^SEED=/ { seed = substr($1, 6) + 0 }
/^scenario=/ { sc = substr($0, 10) }
/^REPLAYED .*identical/ && seed <= 50 { n[sc " " seed]++ }
END { for (k in n) print k, n[k] "x" | "sort -k1,1 -k2,2n" }
