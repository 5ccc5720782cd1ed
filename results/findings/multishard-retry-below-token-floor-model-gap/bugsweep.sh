#!/bin/bash
# seeds to detection per bug mode on its scenario (as locksim -bug-table: sweeps start at
# STARTS, default 1 1001 2001; up to SEEDS seeds, default 30), one process per seed so a raft
# panic costs one seed only. RUNS: where runs are saved.
bin=$1; out=$2
declare -A scen=([follower-grant]=networkPartition [local-renew]=leaderCrash [wall-clock-expiry]=clockSkew
  [token-in-memory]=leaderCrash [queue-in-memory]=leaderThrash [forget-settled]=leaderCrash
  [orphan-waiters]=orphanWaiters [release-on-give-up]=sharedExclusiveMix [unknown-as-unavailable]=networkPartition)
for bug in follower-grant local-renew wall-clock-expiry token-in-memory queue-in-memory forget-settled orphan-waiters release-on-give-up unknown-as-unavailable; do
  s=${scen[$bug]}; counts=""; first=""
  for start in ${STARTS:-1 1001 2001}; do
    n=${SEEDS:-30}; found="not found in $n"; crashes=0
    for ((seed=start; seed<start+n; seed++)); do
      log=$(nice -n 10 $bin -deterministic=false -scenario $s -bug $bug -seed $seed -results ${RUNS:-/tmp/m453/bugsweep} 2>&1); rc=$?
      if [ $rc -eq 0 ]; then found=$((seed-start+1)); [ -z "$first" ] && first="$(echo "$log" | grep -m1 '^CAUGHT' | cut -c1-120) (seed $seed)"; break; fi
      [ $rc -ne 129 ] && crashes=$((crashes+1))
    done
    [ $crashes -gt 0 ] && found="$found ($crashes crashed)"
    counts="$counts${counts:+, }$found"
  done
  echo "| $bug | $s | $counts | \`$first\` |" >> $out
done
