#!/bin/sh
# Shared per-node WAL against one WAL per group (EXPERIMENTS.md, Benchmarks,
# "Shared per-member WAL"). lockd dev (3 members in one process, fsync
# on) with 1 and 4 lock shards, --wal-mode per-group and shared, 16
# closed-loop clients, uncontended and one contended key (FIFO), each
# request sent to its resource's shard leader (-route leader); etcd (3
# members, concurrency.Mutex) in the same loop. Each repetition starts one
# place further down the list, so load from other work on the box falls on
# all configurations. Ports 27470.. (HTTP) and 27570.. (Raft), no gRPC or
# gateway, to stay clear of other benchmarks on the box.
# Run from the repository root: sh results/bench/earlier-design/wal-shared/run.sh
set -e
OUT=${OUT:-results/bench/earlier-design/wal-shared/cluster}
REPS=${REPS:-3}
DUR=${DUR:-6s}
mkdir -p "$OUT" bin
go build -o bin/lockd-walshared ./cmd/lockd
go build -tags peers -o bin/lockbench-peers-walshared ./cmd/lockbench
members=http://127.0.0.1:27470,http://127.0.0.1:27471,http://127.0.0.1:27472
configs="etcd shards1-per-group shards1-shared shards4-per-group shards4-shared"
n=5
for rep in $(seq 1 "$REPS"); do
  i=0
  while [ $i -lt $n ]; do
    cfg=$(echo $configs | cut -d' ' -f$(( (i + rep - 1) % n + 1 )))
    i=$((i + 1))
    if [ "$cfg" = etcd ]; then
      ./bin/lockbench-peers-walshared -target etcd -workload uncontended,contended -clients 16 -duration "$DUR" -quiet -out "$OUT/etcd-$rep" >/dev/null
      continue
    fi
    shards=${cfg%%-*}; shards=${shards#shards}
    mode=${cfg#*-}
    ./bin/lockd-walshared dev --shards "$shards" --wal-mode "$mode" --http-port 27470 --raft-port 27570 --grpc-port 0 --gateway-addr "" >"$OUT/lockd.log" 2>&1 &
    pid=$!
    sleep 8
    ./bin/lockbench-peers-walshared -target lockstep -workload uncontended,contended -clients 16 -duration "$DUR" -quiet \
      -route leader -addrs $members -out "$OUT/$cfg-$rep" >/dev/null
    kill $pid
    wait $pid 2>/dev/null || true
  done
done
rm -f "$OUT/lockd.log"
