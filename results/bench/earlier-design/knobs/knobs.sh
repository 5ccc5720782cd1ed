#!/bin/sh
# hashicorp/raft knobs one at a time (EXPERIMENTS.md, Benchmarks, "hashicorp/raft
# knobs"). lockd dev (3 members in one process, fsync on, WAL, one lock
# shard), 16 closed-loop clients, uncontended, each configuration on a fresh
# cluster, requests spread over the members (-route spread) and sent to the
# shard's leader (-route leader); etcd (3 members, concurrency.Mutex) runs
# in the same loop, once per repetition. Configurations alternate within a
# repetition, and each repetition starts one place further down the list
# (etcd included), so load from other work on the box, and whatever a run
# leaves behind for the next (etcd's disk writes), falls on all of them.
# Run from the repository root: sh results/bench/earlier-design/knobs/knobs.sh
set -e
OUT=${OUT:-results/bench/earlier-design/knobs/out}
REPS=${REPS:-3}
FIRST=${FIRST:-1}
DUR=${DUR:-6s}
CONFIGS=${CONFIGS:-"base: mae64:--max-append-entries=64 mae1024:--max-append-entries=1024 nobatch:--no-batch-apply ct1ms:--commit-timeout=1ms ct50ms:--commit-timeout=50ms rif1:--raft-rpcs-in-flight=1 rif8:--raft-rpcs-in-flight=8 cache:--raft-log-cache=1024"}
mkdir -p "$OUT" bin
go build -o bin/lockd ./cmd/lockd
go build -tags peers -o bin/lockbench-peers ./cmd/lockbench
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
# shellcheck disable=SC2086
set -- etcd: $CONFIGS
for rep in $(seq "$FIRST" $((FIRST + REPS - 1))); do
  for cfg in "$@"; do
    name=${cfg%%:*}
    if [ "$name" = etcd ]; then
      ./bin/lockbench-peers -target etcd -workload uncontended -clients 16 -duration "$DUR" -quiet -out "$OUT/etcd-$rep" >/dev/null
      continue
    fi
    flags=$(echo "${cfg#*:}" | tr , ' ')
    # shellcheck disable=SC2086
    ./bin/lockd dev --shards 1 --http-port 27070 --raft-port 27170 --gateway-addr "" $flags >"$OUT/lockd.log" 2>&1 &
    pid=$!
    sleep 6
    for route in spread leader; do
      ./bin/lockbench-peers -target lockstep -workload uncontended -clients 16 -duration "$DUR" -quiet \
        -route $route -addrs $members -out "$OUT/$name-$route-$rep" >/dev/null
    done
    kill $pid
    wait $pid 2>/dev/null || true
  done
  first=$1
  shift
  set -- "$@" "$first"
done
rm -f "$OUT/lockd.log"
