package scenarios

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/lockstep/lockstep/core/gateway"
	"github.com/lockstep/lockstep/sim"
)

// The real core/gateway as its own simulated host: it has its own network
// identity, so client↔gateway and gateway↔member links drop and delay like
// any other, and partitions cut it off from members. A scenario with
// "gateway" sends every client request through it.

// gatewayID is the gateway host's network identity.
const gatewayID = "gw"

// Gateway timings in the simulator: a request gives up before the client's
// attempt does (so the client hears an answer, not a timeout, and retries),
// and the map follows leaders as fast as the members spread them.
const (
	gatewayRequestTimeout = 1500 * time.Millisecond
	gatewayRefresh        = spreadInterval
)

// simGateway is the running gateway and how to stop it.
type simGateway struct {
	gw   *gateway.Gateway
	stop context.CancelFunc
	done chan struct{}
}

// Gatewayed is a Target whose clients all go through one gateway.
type Gatewayed interface {
	// GatewayURL is the gateway's API base URL; "" when clients talk to
	// the members themselves.
	GatewayURL() string
}

var _ Gatewayed = (*Cluster)(nil)

// GatewayURL implements Gatewayed.
func (c *Cluster) GatewayURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gw == nil {
		return ""
	}
	return c.URL(gatewayID)
}

// startGateway runs the gateway joined to every member, on the side of the
// member gwHome in partitions.
func (c *Cluster) startGateway() error {
	cfg := gateway.DefaultConfig()
	for _, id := range c.order {
		cfg.Join = append(cfg.Join, net.JoinHostPort(id, apiPort))
	}
	cfg.RequestTimeout, cfg.RefreshInterval = gatewayRequestTimeout, gatewayRefresh
	cfg.Transport = &sim.HTTPTransport{Net: c.net, From: gatewayID}
	g, err := gateway.New(cfg)
	if err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sg := &simGateway{gw: g, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(sg.done)
		g.Run(ctx)
	}()
	c.net.HandleHTTP(gatewayID, map[string]http.Handler{apiPort: g.Handler()})
	c.mu.Lock()
	c.gw = sg
	c.mu.Unlock()
	return nil
}

// stopGateway takes the gateway off the network and ends its refreshes.
func (c *Cluster) stopGateway() {
	c.mu.Lock()
	sg := c.gw
	c.gw = nil
	c.mu.Unlock()
	if sg == nil {
		return
	}
	c.net.HandleHTTP(gatewayID, nil)
	sg.stop()
	<-sg.done
}

// gatewayCuts extends a partition to the gateway: it stands with its home
// member, cut from every member the home member is cut from (a gateway
// deployed in one member's rack or zone).
func (c *Cluster) gatewayCuts(pairs [][2]string) [][2]string {
	if c.gwHome == "" {
		return nil
	}
	var out [][2]string
	for _, p := range pairs {
		switch c.gwHome {
		case p[0]:
			out = append(out, [2]string{gatewayID, p[1]})
		case p[1]:
			out = append(out, [2]string{gatewayID, p[0]})
		}
	}
	return out
}
