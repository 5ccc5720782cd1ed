#!/bin/sh
# The propose window (lockd --propose-window N), windows 0
# (off), 1 and 2 on one shard, with the stage breakdown; targets.sh does
# the rest (etcd in each repetition). Run from the repository root:
# sh results/bench/earlier-design/window/run.sh
OUT=${OUT:-results/bench/earlier-design/window} REPS=${REPS:-2} BENCH_ARGS=-breakdown CONFIGS="window0 --propose-window 0
window1 --propose-window 1
window2 --propose-window 2" exec sh results/bench/targets.sh
