package server

import (
	"io"
	"net/http/httptest"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// BenchmarkCodecAcquire measures the HTTP codec's share of one acquire: the
// strict decode of a typical request body and the encoding of its reply.
// The commit-path breakdown (EXPERIMENTS.md §8) puts the whole member
// handler minus the node at 0.04-0.16 ms of a 6-9 ms request; this is its
// codec part, alone.
func BenchmarkCodecAcquire(b *testing.B) {
	body := []byte(`{"resource":"orders/42","client_id":"client-07","ttl":10000,"wait":5000,"request_id":"5f1c0a9e2b7d4c13","mode":"exclusive","policy":"fifo"}`)
	reply := api.AcquireResponse{Granted: true, LeaseID: "0194f3c2a1b24c5d8e9f0a1b2c3d4e5f", FencingToken: 123456, ExpiresInMs: 10000, Mode: api.Exclusive, LogTimeMs: 1_764_000_000_000}
	var in api.AcquireRequest
	if err := decode(body, &in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		in = api.AcquireRequest{}
		if err := decode(body, &in); err != nil {
			b.Fatal(err)
		}
		w := httptest.NewRecorder()
		writeJSON(w, 200, reply)
		_, _ = io.Copy(io.Discard, w.Body)
	}
}
