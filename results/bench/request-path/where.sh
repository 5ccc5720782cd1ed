#!/bin/sh
# Where a cycle's time and CPU go, for `lockd dev` (3 members in one process,
# fsync on) with 1 and 4 lock shards and 16 closed-loop clients, uncontended:
#  - breakdown/s<N>-<route>: lockbench -breakdown scrapes every member's stage
#    histograms before and after an 8 s run, spread over the members and sent
#    to each shard's leader;
#  - profile/: a 15 s CPU profile (lockd --pprof-addr) from the middle of a
#    25 s spread run (load in profile/load-s<N>), and pprof -top -cum of it.
# Run from the repository root:
#   LOCKD=bin/lockd LOCKBENCH=bin/lockbench-peers sh results/bench/request-path/where.sh
set -e
OUT=${OUT:-results/bench/request-path}
LOCKD=${LOCKD:-bin/lockd}
LOCKBENCH=${LOCKBENCH:-bin/lockbench-peers}
mkdir -p "$OUT/breakdown" "$OUT/profile" bin
[ -x "$LOCKD" ] || go build -o "$LOCKD" ./cmd/lockd
[ -x "$LOCKBENCH" ] || go build -tags peers -o "$LOCKBENCH" ./cmd/lockbench
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
for s in 1 4; do
  "$LOCKD" dev --shards "$s" --http-port 27070 --raft-port 27170 --gateway-addr "" --grpc-port 0 \
    --pprof-addr 127.0.0.1:6060 >/dev/null 2>&1 </dev/null &
  pid=$!
  sleep 6
  for route in spread leader; do
    "$LOCKBENCH" -target lockstep -workload uncontended -clients 16 -duration 8s -quiet -breakdown \
      -route "$route" -addrs "$members" -out "$OUT/breakdown/s$s-$route" >/dev/null 2>&1 </dev/null
  done
  "$LOCKBENCH" -target lockstep -workload uncontended -clients 16 -duration 25s -quiet -route spread \
    -addrs "$members" -out "$OUT/profile/load-s$s" >/dev/null 2>&1 </dev/null &
  bench=$!
  sleep 6
  curl -s -o "$OUT/profile/lockd-dev-s$s.cpu.pprof" "http://127.0.0.1:6060/debug/pprof/profile?seconds=15"
  wait "$bench"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  go tool pprof -top -cum -nodecount=80 "$LOCKD" "$OUT/profile/lockd-dev-s$s.cpu.pprof" \
    > "$OUT/profile/lockd-dev-s$s.top-cum.txt" 2>/dev/null
done
