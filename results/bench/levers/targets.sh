#!/bin/sh
# Issue 16's targets with the settings this branch ships: lockd dev (3
# members in one process, fsync on, WAL) with 1 and 4 lock shards, 16
# closed-loop clients, uncontended and one contended key (FIFO), requests
# spread over the members and sent to each resource's shard leader; etcd (3
# members, concurrency.Mutex) in the same loop. Run from the repository
# root: sh results/bench/levers/targets.sh
set -e
OUT=${OUT:-results/bench/levers/targets}
REPS=${REPS:-2}
DUR=${DUR:-6s}
mkdir -p "$OUT" bin
go build -o bin/lockd ./cmd/lockd
go build -tags peers -o bin/lockbench-peers ./cmd/lockbench
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
for rep in $(seq 1 "$REPS"); do
  ./bin/lockbench-peers -target etcd -workload uncontended,contended -clients 16 -duration "$DUR" -quiet -out "$OUT/etcd-$rep" >/dev/null
  for shards in 1 4; do
    ./bin/lockd dev --shards $shards --http-port 27070 --raft-port 27170 --gateway-addr "" >"$OUT/lockd.log" 2>&1 &
    pid=$!
    sleep 8
    for route in spread leader; do
      ./bin/lockbench-peers -target lockstep -workload uncontended,contended -clients 16 -duration "$DUR" -quiet \
        -route $route -addrs $members -out "$OUT/shards$shards-$route-$rep" >/dev/null
    done
    kill $pid
    wait $pid 2>/dev/null || true
  done
done
rm -f "$OUT/lockd.log"
