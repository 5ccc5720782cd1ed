package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
)

// HTTP over the simulated network: a request is serialised as HTTP/1.1,
// carried by Call to the node its host names, served by the handler
// registered for the host's port, and the response comes back the same
// way. So the real HTTP handlers, the real Go client and the real
// forwarder run under every fault the Network injects.

// HandleHTTP serves node id's HTTP requests: a request for host "id:port"
// goes to byPort[port], one for plain "id" to byPort[""]. A nil map
// removes the node (a crash).
func (n *Network) HandleHTTP(id string, byPort map[string]http.Handler) {
	n.HandleMember(id, byPort, nil)
}

// HandleMember serves node id as a member does: HTTP requests as
// HandleHTTP does, and the requests of its link l (nil: none). A nil map
// removes the node (a crash).
func (n *Network) HandleMember(id string, byPort map[string]http.Handler, l *MemberLink) {
	if byPort == nil {
		n.Handle(id, nil)
		return
	}
	n.Handle(id, func(ctx context.Context, _ string, raw []byte) ([]byte, error) {
		if len(raw) > 0 && raw[0] == linkMagic {
			if l == nil {
				return nil, fmt.Errorf("sim: %s serves no link", id)
			}
			return l.serve(ctx, raw)
		}
		req, err := http.ReadRequest(wireReader(raw))
		if err != nil {
			return nil, fmt.Errorf("sim http: bad request: %w", err)
		}
		_, port, err := net.SplitHostPort(req.Host)
		if err != nil {
			port = ""
		}
		h := byPort[port]
		if h == nil {
			return nil, fmt.Errorf("sim http: %s serves nothing on port %q", id, port)
		}
		rec, err := n.serve(id, h, req.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		if err := rec.Result().Write(&out); err != nil {
			return nil, fmt.Errorf("sim http: encode response: %w", err)
		}
		return out.Bytes(), nil
	})
}

// serve runs h on req. A panic fails only this request, as net/http's
// server drops the connection of a panicking handler, and is reported to
// Options.OnHandlerPanic; without that hook it ends the process.
func (n *Network) serve(id string, h http.Handler, req *http.Request) (rec *httptest.ResponseRecorder, err error) {
	if report := n.opts.OnHandlerPanic; report != nil {
		defer func() {
			if v := recover(); v != nil {
				report(id, v, debug.Stack())
				rec, err = nil, fmt.Errorf("sim http: %s: handler panicked: %v", id, v)
			}
		}()
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, nil
}

// HTTPTransport is an http.RoundTripper whose requests travel from From
// over the Network to the node the URL's host names.
type HTTPTransport struct {
	Net  *Network
	From string
}

var _ http.RoundTripper = (*HTTPTransport)(nil)

// RoundTrip implements http.RoundTripper. A request that surely never
// reached its handler fails with a *net.OpError whose Op is "dial", as a
// refused connection does, so callers may treat it as not sent.
func (t *HTTPTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Hostname()
	var raw bytes.Buffer
	if err := req.Write(&raw); err != nil {
		return nil, fmt.Errorf("sim http: encode request: %w", err)
	}
	out, err := t.Net.Call(req.Context(), t.From, host, raw.Bytes())
	if err != nil {
		if errors.Is(err, ErrNotDelivered) {
			return nil, &net.OpError{Op: "dial", Net: "sim", Err: err}
		}
		return nil, err
	}
	return http.ReadResponse(wireReader(out), req)
}

// wireReader reads one whole serialised message. Its buffer is the
// message's size, not bufio's default 4 KiB: the message is already all
// in memory, and a 4 KiB buffer per request and per response was a tenth
// of everything a simulation allocated.
func wireReader(raw []byte) *bufio.Reader {
	return bufio.NewReaderSize(bytes.NewReader(raw), len(raw))
}
