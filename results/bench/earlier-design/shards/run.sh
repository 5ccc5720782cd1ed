#!/bin/sh
# Uncontended acquire+release cycles/s with 1, 2 and 4 lock shards (lockd dev,
# 3 members, fsync on), 16 and 64 clients spreading requests over all nodes.
# Run from the repository root: sh results/bench/earlier-design/shards/run.sh (RUN=b for a repeat)
set -e
go build -o bin/lockd ./cmd/lockd
for n in 1 2 4; do
  ./bin/lockd dev --shards $n --http-port 7370 --raft-port 7470 >/dev/null 2>&1 &
  pid=$!
  sleep 5
  go run ./cmd/lockbench -target lockstep -route spread -workload uncontended -clients 16,64 -duration 8s -quiet \
    -addrs http://127.0.0.1:7370,http://127.0.0.1:7371,http://127.0.0.1:7372 -out results/bench/earlier-design/shards/shards-$n${RUN:+-$RUN}
  kill $pid; wait $pid 2>/dev/null || true
done
