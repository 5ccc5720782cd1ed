#!/bin/sh
# Where an uncontended acquire's time goes: lockd dev (3 members,
# fsync on, WAL) with 1 and 3 shards, 16 closed-loop clients, each
# configuration run REPS times on a fresh cluster, requests spread over the
# three members (2/3 forwarded with one shard) and all through the gateway.
# lockbench -breakdown scrapes the members' stage histograms around each run.
# Also the disk's own limit (fdatasync/s, 1/3/9 writers) before and after.
# Run from the repository root: sh results/bench/earlier-design/breakdown/run.sh
set -e
OUT=${OUT:-results/bench/earlier-design/breakdown}
REPS=${REPS:-2}
DUR=${DUR:-8s}
go build -o bin/lockd ./cmd/lockd
go build -o bin/lockbench ./cmd/lockbench
members=http://127.0.0.1:27070,http://127.0.0.1:27071,http://127.0.0.1:27072
disk() {
  go test -run '^$' -bench DiskFdatasync -benchtime 2000x -count 1 ./core/wal/ | grep Bench >>"$OUT/disk.txt"
}
: >"$OUT/disk.txt"
disk
for rep in $(seq 1 "$REPS"); do
  for n in 1 3; do
    ./bin/lockd dev --shards $n --http-port 27070 --raft-port 27170 --gateway-addr 127.0.0.1:27000 >"$OUT/lockd.log" 2>&1 &
    pid=$!
    sleep 6
    ./bin/lockbench -target lockstep -workload uncontended -clients 16 -duration "$DUR" -quiet -breakdown \
      -route spread -addrs $members -out "$OUT/shards$n-spread-$rep"
    ./bin/lockbench -target lockstep -workload uncontended -clients 16 -duration "$DUR" -quiet -breakdown \
      -route spread -addrs http://127.0.0.1:27000 -metrics-addrs $members -out "$OUT/shards$n-gateway-$rep"
    kill $pid
    wait $pid 2>/dev/null || true
  done
done
disk
rm -f "$OUT/lockd.log"
