#!/bin/bash
# usage: reruns.sh BIN TAG N  -- reruns seeds 199 34 55 N times each
bin=$1; tag=$2; n=$3
for s in 199 34 55; do
  fails=0
  for k in $(seq 1 $n); do
    out=$(nice -n 10 /tmp/lr/$bin -deterministic=false -scenario orphanWaiters -seed $s -results /tmp/lr/rr-$tag/$k 2>&1)
    if ! echo "$out" | grep -q "0 not as expected"; then fails=$((fails+1)); echo "== $tag seed $s run $k"; echo "$out" | grep -A5 UNEXPECTED | head -8; fi
  done
  echo "$tag seed $s: $fails/$n not as expected"
done
