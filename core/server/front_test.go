package server_test

import (
	"testing"

	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
	"github.com/lockstep/lockstep/core/shard"
)

// front builds the HTTP front end over a service on h, as lockd wires
// them: svc tunes the operations (request timeout, in-flight bound,
// namespaces, logger), http the HTTP limits.
func front(t testing.TB, h *shard.Host, svc service.Config, http server.Config) *server.Server {
	t.Helper()
	s, err := service.New(h, svc)
	if err != nil {
		t.Fatal(err)
	}
	return server.New(s, http)
}
