package sim

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Goal: HTTP requests reach the handler of the host's port over the
// simulated network, and a request the network never delivered looks like
// a refused connection. Method: two ports on one node, then a partition.
func TestHTTPOverTheNetwork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond}, CallTimeout: time.Second})
		defer n.Close()
		n.HandleHTTP("n1", map[string]http.Handler{
			"7070": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				w.Header().Set("X-Port", "api")
				_, _ = w.Write([]byte("api:" + r.URL.Path + ":" + string(b)))
			}),
			"": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusTeapot)
			}),
		})
		c := &http.Client{Transport: &HTTPTransport{Net: n, From: "c1"}}
		resp, err := c.Post("http://n1:7070/lock/acquire", "application/json", strings.NewReader("body"))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != "api:/lock/acquire:body" || resp.Header.Get("X-Port") != "api" {
			t.Fatalf("api port answered %d %q", resp.StatusCode, b)
		}
		resp, err = c.Get("http://n1/internal")
		if err != nil || resp.StatusCode != http.StatusTeapot {
			t.Fatalf("member port answered %v, %v", resp, err)
		}
		resp.Body.Close()

		n.Partition([]string{"c1"}, []string{"n1"})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://n1:7070/x", nil)
		_, err = c.Do(req)
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "dial" {
			t.Fatalf("partitioned request: %v, want a dial error", err)
		}
	})
}

// Goal: a panicking handler fails only its request and is reported, as
// net/http's server would log it, so a simulation survives it with a
// finding. Method: a handler that panics, then the same node again.
func TestHTTPHandlerPanicIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var reported []string
		n := NewNetwork(Options{Link: Link{LatencyBase: time.Millisecond}, CallTimeout: time.Second,
			OnHandlerPanic: func(id string, v any, stack []byte) {
				reported = append(reported, id+": "+v.(string))
				if !strings.Contains(string(stack), "http_test.go") {
					t.Errorf("stack does not show the handler:\n%s", stack)
				}
			}})
		defer n.Close()
		n.HandleHTTP("n1", map[string]http.Handler{
			"7070": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/boom" {
					panic("invariant broken")
				}
				w.WriteHeader(http.StatusNoContent)
			}),
		})
		c := &http.Client{Transport: &HTTPTransport{Net: n, From: "c1"}}
		if resp, err := c.Get("http://n1:7070/boom"); err == nil {
			resp.Body.Close()
			t.Fatalf("a panicking handler answered %d", resp.StatusCode)
		}
		resp, err := c.Get("http://n1:7070/ok")
		if err != nil {
			t.Fatalf("the node stopped serving after a panic: %v", err)
		}
		resp.Body.Close()
		if len(reported) != 1 || reported[0] != "n1: invariant broken" {
			t.Fatalf("reported %q, want the one panic", reported)
		}
	})
}
