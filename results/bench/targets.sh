#!/bin/sh
# The targets with lockd's defaults: lockd dev (3 members in one process,
# fsync on, WAL) with 1 and 4 lock shards, 16
# closed-loop clients, uncontended and one contended key (FIFO), requests
# spread over the members and sent to each resource's shard leader; etcd (3
# members, concurrency.Mutex) in the same loop. Run from the repository
# root: sh results/bench/targets.sh
# CONFIGS lists the lockd setups, one per line: a run name, then lockd dev
# arguments; BENCH_ARGS are extra lockbench flags (e.g. -breakdown).
set -e
OUT=${OUT:-results/bench/targets}
REPS=${REPS:-2}
DUR=${DUR:-6s}
CONFIGS=${CONFIGS:-"shards1 --shards 1
shards4 --shards 4"}
mkdir -p "$OUT" bin
go build -o bin/lockd ./cmd/lockd
go build -tags peers -o bin/lockbench-peers ./cmd/lockbench
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
for rep in $(seq 1 "$REPS"); do
  ./bin/lockbench-peers -target etcd -workload uncontended,contended -clients 16 -duration "$DUR" -quiet -out "$OUT/etcd-$rep" >/dev/null
  echo "$CONFIGS" | while read -r name args; do
    # shellcheck disable=SC2086 # args are words
    ./bin/lockd dev $args --http-port 27070 --raft-port 27170 --gateway-addr "" >"$OUT/lockd.log" 2>&1 </dev/null &
    pid=$!
    sleep 8
    for route in spread leader; do
      # shellcheck disable=SC2086
      ./bin/lockbench-peers -target lockstep -workload uncontended,contended -clients 16 -duration "$DUR" -quiet \
        -route $route -addrs $members $BENCH_ARGS -out "$OUT/$name-$route-$rep" >/dev/null </dev/null
    done
    kill $pid
    wait $pid 2>/dev/null || true
  done
done
rm -f "$OUT/lockd.log"
