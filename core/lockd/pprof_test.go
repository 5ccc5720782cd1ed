package lockd

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// Goal: the profiling listener serves pprof's index on loopback and
// refuses an address off the machine before binding anything.
func TestServeProfiles(t *testing.T) {
	if _, err := ServeProfiles("0.0.0.0:0", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a wildcard address was accepted")
	}
	p, err := ServeProfiles("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	resp, err := http.Get("http://" + p.Addr() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("index: %d %.200s", resp.StatusCode, body)
	}
}
