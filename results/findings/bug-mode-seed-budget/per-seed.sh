#!/bin/bash
# 30 sweeps of seeds 1..50; one line per (rep, seed, caught?)
for rep in $(seq 1 30); do
  nice -n 10 /tmp/flakes-locksim -bug unknown-as-unavailable -scenario networkPartition -seeds 1..50 -results /tmp/flakes-res-$rep 2>&1 \
   | awk -v rep=$rep '/^SEED=/{s=substr($0,6)} /^CAUGHT/{print rep, s, 1} /^NOT CAUGHT/{print rep, s, 0}'
  rm -rf /tmp/flakes-res-$rep
done
