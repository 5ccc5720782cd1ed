package models

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func kvOp(client int, call, ret int64, in KVInput, out KVOutput) porcupine.Operation {
	if out.Unknown {
		ret = math.MaxInt64
	}
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func read(key string) KVInput                            { return KVInput{Op: KVRead, Key: key} }
func write(key, v string) KVInput                        { return KVInput{Op: KVWrite, Key: key, Value: v} }
func cas(key, from, to string) KVInput                   { return KVInput{Op: KVCAS, Key: key, From: from, To: to} }
func val(v string) KVOutput                              { return KVOutput{Value: v} }
func code(c string) KVOutput                             { return KVOutput{Code: c} }
func kvUnknown() KVOutput                                { return KVOutput{Unknown: true} }
func kvOK() KVOutput                                     { return KVOutput{} }
func ops(o ...porcupine.Operation) []porcupine.Operation { return o }

// TestKVHistories checks the lin-kv model via Porcupine on legal histories (incl. indefinite ops) and on stale reads, lost writes and wrong cas answers.
func TestKVHistories(t *testing.T) {
	cases := []struct {
		name  string
		legal bool
		ops   []porcupine.Operation
	}{
		{"read missing key", true, ops(kvOp(0, 0, 1, read("k"), code(CodeKeyNotFound)))},
		{"write then read", true, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(1, 2, 3, read("k"), val("1")))},
		{"concurrent read sees old or new", true, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 5, write("k", "2"), kvOK()),
			kvOp(1, 3, 4, read("k"), val("1")))},
		{"cas success", true, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 3, cas("k", "1", "2"), kvOK()),
			kvOp(1, 4, 5, read("k"), val("2")))},
		{"cas precondition failed", true, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 3, cas("k", "9", "2"), code(CodePreconditionFailed)),
			kvOp(1, 4, 5, read("k"), val("1")))},
		{"cas on missing key", true, ops(kvOp(0, 0, 1, cas("k", "1", "2"), code(CodeKeyNotFound)))},
		{"unknown write may apply", true, ops(
			kvOp(0, 0, 0, write("k", "1"), kvUnknown()),
			kvOp(1, 2, 3, read("k"), val("1")))},
		{"unknown write may not apply", true, ops(
			kvOp(0, 0, 0, write("k", "1"), kvUnknown()),
			kvOp(1, 2, 3, read("k"), code(CodeKeyNotFound)))},
		{"unknown cas may apply later", true, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 0, cas("k", "1", "2"), kvUnknown()),
			kvOp(1, 3, 4, read("k"), val("1")),
			kvOp(1, 5, 6, read("k"), val("2")))},
		{"definite error has no effect", true, ops(
			kvOp(0, 0, 1, write("k", "1"), code("temporarily_unavailable")),
			kvOp(1, 2, 3, read("k"), code(CodeKeyNotFound)))},
		{"keys are independent", true, ops(
			kvOp(0, 0, 1, write("a", "1"), kvOK()),
			kvOp(1, 2, 3, read("b"), code(CodeKeyNotFound)))},

		{"stale read", false, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 3, write("k", "2"), kvOK()),
			kvOp(1, 4, 5, read("k"), val("1")))},
		{"read of missing key after write", false, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(1, 2, 3, read("k"), code(CodeKeyNotFound)))},
		{"cas succeeds on wrong value", false, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 3, cas("k", "9", "2"), kvOK()))},
		{"cas fails on matching value", false, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 3, cas("k", "1", "2"), code(CodePreconditionFailed)))},
		{"cas not found on present key", false, ops(
			kvOp(0, 0, 1, write("k", "1"), kvOK()),
			kvOp(0, 2, 3, cas("k", "1", "2"), code(CodeKeyNotFound)))},
		{"value from nowhere", false, ops(kvOp(0, 0, 1, read("k"), val("7")))},
		{"unknown write cannot flip back", false, ops(
			kvOp(0, 0, 0, write("k", "1"), kvUnknown()),
			kvOp(1, 2, 3, read("k"), val("1")),
			kvOp(1, 4, 5, read("k"), code(CodeKeyNotFound)))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := porcupine.CheckOperationsTimeout(KV, tc.ops, 5*time.Second)
			want := porcupine.Illegal
			if tc.legal {
				want = porcupine.Ok
			}
			if got != want {
				t.Fatalf("check = %v, want %v", got, want)
			}
		})
	}
}
