package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lockstep/lockstep/core/api"
)

// TestTokenSentAndRefusalFinal: goal — Config.Token goes out as
// "Authorization: Bearer <token>" on every request, and a 401 is final
// (one attempt, not retried). Method: a server that wants one token.
func TestTokenSentAndRefusalFinal(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer s3cret-s3cret-s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"unauthenticated","code":"unauthenticated"}`))
			return
		}
		_, _ = w.Write([]byte(`{"resource":"a:1","holders":[],"queue":[]}`))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"s3cret-s3cret-s3cret", true}, {"", false}} {
		calls = 0
		c, err := New(Config{Endpoints: []string{srv.URL}, Token: tc.token, DisableShardRouting: true})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Status(context.Background(), "a:1")
		var apiErr *APIError
		switch {
		case tc.ok && err != nil:
			t.Fatalf("with the token: %v", err)
		case !tc.ok && (!errors.As(err, &apiErr) || apiErr.Code != api.CodeUnauthenticated || calls != 1):
			t.Fatalf("without the token: %v after %d calls", err, calls)
		}
	}
}
