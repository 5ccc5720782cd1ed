#!/bin/bash
# Native speed, before and after: each (scenario, seed) is one process, as
# `/usr/bin/time locksim -deterministic=false -scenario S -seed N -results ""`,
# the binaries interleaved so that both see the same load.
# usage: measure-native.sh REPS "label=ENV... BINARY" ...
# prints: label scenario seed wall_s user_s sys_s loadavg_1min
reps=$1; shift
for r in $(seq "$reps"); do
  for s in leaderCrash clockSkew networkPartition idleExpiry; do
    for seed in 1 2 3; do
      for cfg in "$@"; do
        label=${cfg%%=*}; cmd=${cfg#*=}
        t=$( { /usr/bin/time -f "%e %U %S" env $cmd -deterministic=false -scenario $s -seed $seed -results "" >/dev/null; } 2>&1 | tail -1)
        echo "$label $s $seed $t $(cut -d' ' -f1 /proc/loadavg)"
      done
    done
  done
done
