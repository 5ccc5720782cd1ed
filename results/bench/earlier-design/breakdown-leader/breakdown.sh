#!/bin/sh
# Where an uncontended acquire's time goes with requests sent to the shard
# leader (no forward hop), for comparison with breakdown/'s spread/gateway runs:
# lockd dev --shards 1, 16 clients, REPS runs on fresh clusters.
# Run from the repository root: sh results/bench/earlier-design/breakdown-leader/breakdown.sh
set -e
OUT=${OUT:-results/bench/earlier-design/breakdown-leader}
REPS=${REPS:-2}
DUR=${DUR:-8s}
mkdir -p "$OUT" bin
go build -o bin/lockd ./cmd/lockd
go build -o bin/lockbench ./cmd/lockbench
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
for rep in $(seq 1 "$REPS"); do
  ./bin/lockd dev --shards 1 --http-port 27070 --raft-port 27170 --gateway-addr "" >"$OUT/lockd.log" 2>&1 &
  pid=$!
  sleep 6
  ./bin/lockbench -target lockstep -workload uncontended -clients 16 -duration "$DUR" -quiet -breakdown \
    -route leader -addrs $members -out "$OUT/leader-$rep" >/dev/null
  kill $pid
  wait $pid 2>/dev/null || true
done
rm -f "$OUT/lockd.log"
