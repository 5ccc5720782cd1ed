// Package bench load-tests lock services behind one interface and reports
// throughput, latency and fairness. It compares lockstep with the services a
// user would otherwise pick, under the same workload:
//
//   - lockstep: the Raft-replicated server, over its HTTP/JSON API
//     (package api), following the leader named by GET /cluster and
//     retrying 503s; policy fifo or throughput, mode exclusive or shared.
//   - bare: BareServer, the same API over one mutex and in-memory FIFO
//     queues with no consensus: the floor for an HTTP lock server.
//   - etcd, etcd1: embedded etcd v3.7 (3 or 1 members, fsync on) with the
//     client's concurrency.Mutex, one session per client. Built only with
//     -tags peers, to keep etcd out of the default build.
//   - redis, redis-aof: a redis-server child process (default persistence,
//     or appendfsync always) with SET NX PX and a compare-and-delete
//     script; no fencing, no queue (clients poll with backoff).
//
// An op is one acquire+release cycle. Per run the harness measures ops/s;
// acquire, release and handoff latency (release sent until the next,
// already waiting, holder is granted, on one in-process monotonic clock);
// fairness as Jain's index over clients' grant counts, starved clients and
// wait percentiles; FIFO inversions per key; and errors by kind. Every run
// is bounded by time and by op count. Reports are JSON, a Markdown table
// (ratio columns vs etcd and redis) and gonum plots.
//
// Command-line use is through cmd/lockbench, for example:
//
//	go run ./cmd/lockbench -target bare,redis,redis-aof -clients 16 -keys 1 -duration 10s -out results/bench/base
//	go run -tags peers ./cmd/lockbench -target etcd,etcd1 -clients 1,4,16,64 -out results/bench/etcd
//	go build -o /tmp/lockd ./cmd/lockd && go run ./cmd/lockbench -target lockstep -spawn /tmp/lockd -mode fifo,throughput
//
// Workloads: -workload uncontended gives each client its own -keys keys;
// contended shares -keys keys (1 = a single hot key) among all clients.
// -dist zipf (-zipf-s) skews key choice. -clients N runs N closed-loop
// clients (a comma list sweeps); -rate R switches to an open loop with R
// arrivals/s and the client count as in-flight cap (latency then counts
// from the intended arrival, and refused arrivals are reported as dropped).
// The host load average is recorded with every result: numbers from a busy
// machine are noisy.
package bench
