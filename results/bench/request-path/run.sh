#!/bin/sh
# CPU per lock cycle on the request path: for each repetition, bench/'s bare
# in-memory HTTP/JSON server, etcd (3 members, concurrency.Mutex) and each
# lockd binary in LOCKDS ("name=path" words) as `lockd dev` (3 members in
# one process, fsync on) with 1 and 4 lock shards, requests spread over the
# members (a load balancer) and sent to each shard's leader, 16 closed-loop
# clients, uncontended and one contended key. lockbench reports the
# machine's CPU per cycle (/proc/stat over the window) next to cycles/s and
# latency. Run from the repository root:
#   LOCKDS="after=bin/lockd" sh results/bench/request-path/run.sh
set -e
OUT=${OUT:-results/bench/request-path/data}
REPS=${REPS:-3}
DUR=${DUR:-8s}
SHARDS=${SHARDS:-"1 4"}
ROUTES=${ROUTES:-"spread leader"}
WORKLOADS=${WORKLOADS:-uncontended,contended}
LOCKBENCH=${LOCKBENCH:-bin/lockbench-peers}
DEVARGS=${DEVARGS:-}
mkdir -p "$OUT" bin
[ -x "$LOCKBENCH" ] || go build -tags peers -o "$LOCKBENCH" ./cmd/lockbench
[ -n "$LOCKDS" ] || { go build -o bin/lockd ./cmd/lockd; LOCKDS="lockd=bin/lockd"; }
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
for rep in $(seq 1 "$REPS"); do
  "$LOCKBENCH" -target bare -workload "$WORKLOADS" -clients 16 -duration "$DUR" -quiet -out "$OUT/bare-$rep" >/dev/null
  "$LOCKBENCH" -target etcd -workload "$WORKLOADS" -clients 16 -duration "$DUR" -quiet -out "$OUT/etcd-$rep" >/dev/null
  for spec in $LOCKDS; do
    name=${spec%%=*}; bin=${spec#*=}
    for shards in $SHARDS; do
      # shellcheck disable=SC2086 # DEVARGS are words
      "$bin" dev --shards "$shards" --http-port 27070 --raft-port 27170 --gateway-addr "" --grpc-port 0 $DEVARGS >"$OUT/lockd.log" 2>&1 </dev/null &
      pid=$!
      sleep 6
      for route in $ROUTES; do
        "$LOCKBENCH" -target lockstep -workload "$WORKLOADS" -clients 16 -duration "$DUR" -quiet \
          -route "$route" -addrs "$members" -out "$OUT/$name-s$shards-$route-$rep" >/dev/null </dev/null
      done
      kill "$pid"
      wait "$pid" 2>/dev/null || true
    done
  done
done
rm -f "$OUT/lockd.log"
python3 results/bench/summarize.py "$OUT" > "$OUT/table.md"
cat "$OUT/table.md"
