package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPlainHTTPToTLSPortSaysTLS: goal — a client given an http:// endpoint
// that serves TLS gets an error that says so and names https:// and
// Config.TLS (errors.Is ErrServerSpeaksTLS), not net/http's bare 400
// "Client sent an HTTP request to an HTTPS server", and does not retry it
// (the configuration is wrong, not the server). Method: an HTTPS test
// server, a client pointed at it with http://; one acquire.
func TestPlainHTTPToTLSPortSaysTLS(t *testing.T) {
	var served atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
	defer srv.Close()
	plain := "http://" + strings.TrimPrefix(srv.URL, "https://")
	c := newTestClient(t, fastRetries(Config{Endpoints: []string{plain}, MaxAttempts: 3}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Acquire(ctx, "r", AcquireOptions{TTL: time.Second})
	if !errors.Is(err, ErrServerSpeaksTLS) || !strings.Contains(err.Error(), "https://") ||
		!strings.Contains(err.Error(), "Config.TLS") || !strings.Contains(err.Error(), plain) {
		t.Fatalf("acquire over plain HTTP to a TLS port: %v, want ErrServerSpeaksTLS naming %s, https:// and Config.TLS", err, plain)
	}
	if strings.Contains(err.Error(), "giving up after") {
		t.Fatalf("a plain request to a TLS port was retried: %v", err)
	}
	if served.Load() != 0 {
		t.Fatalf("the handler ran %d times: the request should have stopped at the TLS handshake", served.Load())
	}
}
