package lockd_test

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/tlsconf"
)

// TestAPIProtocols: goal — what README's Limits say of connections holds:
// a member's HTTPS port negotiates HTTP/2 (ALPN h2) and allows 100
// concurrent streams per connection, and its plaintext port speaks
// HTTP/1.1 only (no h2c), one request at a time. Method: one member with
// TLS and one without; GET /livez over each with a client that would
// take h2; on the TLS port read the server's first SETTINGS frame for
// SETTINGS_MAX_CONCURRENT_STREAMS; on the plaintext port a client that
// speaks only prior-knowledge h2c must fail.
func TestAPIProtocols(t *testing.T) {
	p := issuePKI(t, []string{"n1"}, []string{"app"})
	app := p.clients["app"]
	secure, _ := startShardedWith(t, 1, 1, func(o *lockd.Options) {
		o.TLS = &lockd.TLS{Cert: p.nodes[o.ID], CA: p.ca, APIClients: p.ca}
	})
	h2 := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: tlsconf.Client(p.ca, &app), ForceAttemptHTTP2: true}}
	resp, err := h2.Get(secure[0].URL() + api.PathLive)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/2.0" {
		t.Errorf("HTTPS port answered over %s, want HTTP/2.0", resp.Proto)
	}
	if n := maxConcurrentStreams(t, strings.TrimPrefix(secure[0].URL(), "https://"), tlsconf.Client(p.ca, &app)); n != 100 {
		t.Errorf("HTTPS port allows %d streams per connection, want 100", n)
	}

	plain, _ := startShardedWith(t, 1, 1, nil)
	resp, err = http.Get(plain[0].URL() + api.PathLive)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Proto != "HTTP/1.1" {
		t.Errorf("plaintext port answered over %s, want HTTP/1.1", resp.Proto)
	}
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	onlyH2C := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Protocols: &h2c}}
	if resp, err := onlyH2C.Get(plain[0].URL() + api.PathLive); err == nil {
		resp.Body.Close()
		t.Errorf("plaintext port answered h2c over %s, want HTTP/1.1 only", resp.Proto)
	}
}

// maxConcurrentStreams opens an h2 connection to addr and returns the
// SETTINGS_MAX_CONCURRENT_STREAMS of the server's first SETTINGS frame
// (RFC 9113 §6.5; 0 when it sends none).
func maxConcurrentStreams(t *testing.T, addr string, cfg *tls.Config) uint32 {
	t.Helper()
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if got := conn.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("ALPN negotiated %q, want h2", got)
	}
	// The client preface, then an empty SETTINGS frame.
	if _, err := conn.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	for range 8 { // the server's SETTINGS comes first; bound the frames read
		var header [9]byte
		if _, err := io.ReadFull(conn, header[:]); err != nil {
			t.Fatal(err)
		}
		length := int(header[0])<<16 | int(header[1])<<8 | int(header[2])
		payload := make([]byte, length)
		if _, err := io.ReadFull(conn, payload); err != nil {
			t.Fatal(err)
		}
		if header[3] != 4 || header[4]&1 != 0 { // not SETTINGS, or a SETTINGS ACK
			continue
		}
		if length%6 != 0 {
			t.Fatal(errors.New("malformed SETTINGS frame"))
		}
		for i := 0; i < length; i += 6 {
			if binary.BigEndian.Uint16(payload[i:]) == 0x3 {
				return binary.BigEndian.Uint32(payload[i+2:])
			}
		}
		return 0
	}
	t.Fatal("no SETTINGS frame from the server")
	return 0
}
