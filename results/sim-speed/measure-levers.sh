#!/bin/bash
# Guest levers, A/B: each configuration runs the same (scenario, seeds) in
# one process (`locksim -deterministic -jobs 1`), configurations interleaved
# rep by rep so that the box's load hits them alike. Run from a checkout
# (the host builds or finds its guest there) with LOCKSIM_CACHE prepared.
# usage: measure-levers.sh REPS SCENARIO SEEDS "label=[ENV=V ...] BINARY [ARGS]" ...
# prints: label scenario seeds cpu_s(user+sys) wall_s guest_run_s(sum) maxrss_kb loadavg_1min
reps=$1 scenario=$2 seeds=$3; shift 3
for r in $(seq "$reps"); do
  for cfg in "$@"; do
    label=${cfg%%=*}; cmd=${cfg#*=}
    t=$(/usr/bin/time -f "%U %S %e %M" env $cmd -deterministic -jobs 1 -scenario "$scenario" -seeds "$seeds" -results "" 2>&1 >/dev/null | awk '
      /run [0-9.m]+s\)/ { v=$0; sub(/.*run /,"",v); sub(/\).*/,"",v); if (v ~ /ms$/) run+=v/1000; else if (v ~ /m/) { split(v, p, "m"); run+=p[1]*60+p[2] } else run+=v }
      /^[0-9.]+ [0-9.]+ [0-9.]+ [0-9]+$/ { printf "%.2f %s %.2f %s", $1+$2, $3, run, $4 }')
    echo "$label $scenario $seeds $t $(cut -d' ' -f1 /proc/loadavg)"
  done
done
