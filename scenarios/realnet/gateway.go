package realnet

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockstep/lockstep/nemesis/proxy"
	"github.com/lockstep/lockstep/scenarios"
)

// A scenario with "gateway" runs a real `lockd gateway` process joined to
// every member, and every client request goes through it. As in the
// simulator it stands with one home member in partitions (a gateway in one
// member's rack): its connections to each member go through a proxy link
// of ours (lockd gateway --fault-via), cut when its home member is cut
// from that member.

// Gateway timings, the simulator's: a request gives up before the client's
// attempt does (so the client hears an answer, not a timeout, and
// retries), and the map is refreshed often.
const (
	gatewayRequestTimeout = 1500 * time.Millisecond
	gatewayRefresh        = 500 * time.Millisecond
)

// gateway is the gateway process slot and its links to the members.
type gateway struct {
	httpAddr, log, home string
	proc                *process
	// via maps each member's API address to the proxy the gateway reaches
	// it through; links are those proxies' links, by member.
	via     map[string]string
	links   map[string]*proxy.Link
	proxies []*proxy.Proxy
	// conns counts the connections the gateway opened to each member
	// through its links: none would mean it bypassed them.
	conns map[string]*atomic.Int64
}

var _ scenarios.Gatewayed = (*Cluster)(nil)

// GatewayURL implements scenarios.Gatewayed.
func (c *Cluster) GatewayURL() string {
	if c.gw == nil {
		return ""
	}
	return "http://" + c.gw.httpAddr
}

// gatewayArgs is the gateway's command line.
func (c *Cluster) gatewayArgs() []string {
	var join, via []string
	for _, m := range c.members {
		join = append(join, m.apiAddr())
		via = append(via, m.apiAddr()+"="+c.gw.via[m.apiAddr()])
	}
	return []string{"gateway", "--join", strings.Join(join, ","), "--http-addr", c.gw.httpAddr,
		"--request-timeout", gatewayRequestTimeout.String(), "--refresh-interval", gatewayRefresh.String(),
		"--fault-via", strings.Join(via, ","), "--insecure"}
}

// startGateway starts the gateway and waits until it serves.
func (c *Cluster) startGateway() error {
	addr, err := freePort()
	if err != nil {
		return err
	}
	c.gw = &gateway{httpAddr: addr, log: filepath.Join(c.opts.Dir, "gw.log"), home: c.opts.GatewayHome,
		via: map[string]string{}, links: map[string]*proxy.Link{}, conns: map[string]*atomic.Int64{}}
	for _, m := range c.members {
		l := proxy.NewLink(gatewayID + "->" + m.id)
		l.SetDelay(c.opts.Delay)
		n := new(atomic.Int64)
		c.gw.conns[m.id] = n
		px, err := proxy.Listen("127.0.0.1:0", m.apiAddr(), func(net.Addr) *proxy.Link { n.Add(1); return l })
		if err != nil {
			return err
		}
		c.gw.proxies = append(c.gw.proxies, px)
		c.gw.via[m.apiAddr()], c.gw.links[m.id] = px.Addr(), l
	}
	p, err := startProcess(c.opts.Bin, c.gatewayArgs(), c.gw.log)
	if err != nil {
		return fmt.Errorf("start gateway: %w", err)
	}
	c.gw.proc = p
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.api.Get(c.GatewayURL() + "/livez")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.exited() || time.Now().After(deadline) {
			return fmt.Errorf("gateway did not serve (log %s)", c.gw.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopGateway stops the gateway process and its proxies.
func (c *Cluster) stopGateway() {
	if c.gw == nil {
		return
	}
	if c.gw.proc != nil {
		c.gw.proc.stop(5 * time.Second)
		c.gw.proc = nil
	}
	for _, px := range c.gw.proxies {
		_ = px.Close()
	}
	for _, l := range c.gw.links {
		l.Set(proxy.Reset)
	}
	c.gw.proxies = nil
}

// gatewayID names the gateway in its links.
const gatewayID = "gw"

// cutGateway extends a partition to the gateway: it is cut from every
// member its home member is cut from, and reaches every other.
func (c *Cluster) cutGateway(pairs [][2]string) {
	if c.gw == nil {
		return
	}
	cut := map[string]bool{}
	for _, p := range pairs {
		switch c.gw.home {
		case p[0]:
			cut[p[1]] = true
		case p[1]:
			cut[p[0]] = true
		}
	}
	for id, l := range c.gw.links {
		if cut[id] {
			l.Set(proxy.Blackhole)
		} else if st, _ := l.State(); st != proxy.Pass {
			l.Set(proxy.Pass)
		}
	}
}

// gatewayConns is how many connections the gateway opened to each member.
func (c *Cluster) gatewayConns() map[string]int64 {
	out := map[string]int64{}
	for id, n := range c.gw.conns {
		out[id] = n.Load()
	}
	return out
}
