package server_test

import (
	"errors"
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
	srv, err := server.New(s, http)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// TestNewRefusesNegativeLimits: goal — a negative limit is refused, not
// silently replaced by the default. Method: each field negative in turn.
func TestNewRefusesNegativeLimits(t *testing.T) {
	for _, cfg := range []server.Config{{MaxBodyBytes: -1}, {ReadTimeout: -1}, {WriteTimeout: -1}, {IdleTimeout: -1}} {
		if err := cfg.Validate(); !errors.Is(err, server.ErrConfig) {
			t.Errorf("%+v: Validate %v, want ErrConfig", cfg, err)
		}
	}
	if err := server.DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
}
