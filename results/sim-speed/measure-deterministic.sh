#!/bin/bash
# Deterministic speed, before and after: one (scenario, seed) per process,
# `locksim -deterministic -jobs 1 -scenario S -seed N -results ""`, run
# from the checkout whose guest it builds (the before one is a `git
# archive` of the parent commit), guests prepared beforehand with
# `locksim -deterministic -prepare` into LOCKSIM_CACHE.
# usage: measure-deterministic.sh REPS "label=DIR BINARY" ...
# prints: label scenario seed wall_s user_s sys_s loadavg_1min
reps=$1; shift
for r in $(seq "$reps"); do
  for s in leaderCrash clockSkew networkPartition idleExpiry; do
    for seed in 1 2; do
      for cfg in "$@"; do
        label=${cfg%%=*}; rest=${cfg#*=}; dir=${rest%% *}; bin=${rest#* }
        t=$( { cd "$dir" && /usr/bin/time -f "%e %U %S" $bin -deterministic -jobs 1 -scenario $s -seed $seed -results "" >/dev/null; } 2>&1 | tail -1)
        echo "$label $s $seed $t $(cut -d' ' -f1 /proc/loadavg)"
      done
    done
  done
done
