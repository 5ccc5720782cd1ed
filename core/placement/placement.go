// Package placement decides which lock shard (Raft group) serves a
// resource. It uses jump consistent hashing (Lamping & Veach) over a stable
// 64-bit hash of the resource name: no ring and no virtual nodes to tune,
// near-perfect balance, no state beyond the shard count, and when shards
// are added only the resources that must move do (1/(n+1) of them). The
// choice is stable across processes and versions: every node and gateway
// must place a resource alike.
//
// Hash tags, as in Redis Cluster: when a name holds "{...}" with something
// between the braces, only that part is hashed, so "orders:{42}:row7" and
// "orders:{42}:row8" share a shard and can be locked together atomically.
package placement

import "hash/fnv"

// Shard numbers lock shards 1..n; group 0 is the metadata group.
type Shard uint32

// Of returns the shard of resource among shards lock shards (shards >= 1).
func Of(resource string, shards int) Shard {
	if shards < 1 {
		panic("placement: no shards")
	}
	return Shard(jump(mix(hashKey(resource)), shards) + 1)
}

// Key is the part of resource that is hashed: its hash tag if it has one.
func Key(resource string) string {
	open := -1
	for i := 0; i < len(resource); i++ {
		if resource[i] == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		return resource
	}
	for j := open + 1; j < len(resource); j++ {
		if resource[j] == '}' {
			if j == open+1 {
				return resource // "{}" tags nothing: hash the whole name
			}
			return resource[open+1 : j]
		}
	}
	return resource
}

func hashKey(resource string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(Key(resource)))
	return h.Sum64()
}

// mix is splitmix64's finalizer: FNV's low bits are weak for short,
// similar names, and jump hashing feeds on all 64.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// jump is Lamping and Veach's jump consistent hash: a bucket in [0, n).
func jump(key uint64, n int) int {
	b, j := int64(-1), int64(0)
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}
