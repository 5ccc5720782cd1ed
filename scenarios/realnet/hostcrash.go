package realnet

import (
	"net"

	"github.com/lockstep/lockstep/nemesis/proxy"
)

// Host crashes. kill -9 of a process leaves its host up: the kernel
// refuses new connections and resets open ones at once, so a client's
// attempts fail in microseconds. The simulator's crash is a host that
// vanishes from the network (a request's sender learns nothing until its
// timeout). With ClusterOptions.HostCrash the clients, the gateway and the
// members' API calls reach each member through a front proxy of ours (the
// member publishes that address, lockd --advertise-http), which blackholes
// while the member is down: a crash then looks like the simulator's.

// front is a member's API front proxy and its link.
type front struct {
	addr string
	link *proxy.Link
	px   *proxy.Proxy
}

// openFront starts m's front proxy.
func (c *Cluster) openFront(m *member) error {
	l := proxy.NewLink("clients->" + m.id)
	l.SetDelay(c.opts.Delay)
	px, err := proxy.Listen("127.0.0.1:0", m.httpAddr, func(net.Addr) *proxy.Link { return l })
	if err != nil {
		return err
	}
	m.front = &front{addr: px.Addr(), link: l, px: px}
	return nil
}

// apiAddr is where everyone but the harness reaches m's API.
func (m *member) apiAddr() string {
	if m.front != nil {
		return m.front.addr
	}
	return m.httpAddr
}

// hostDown makes m's front hold every byte (its host is gone) or pass.
func (m *member) hostDown(down bool) {
	if m.front == nil {
		return
	}
	if down {
		m.front.link.Set(proxy.Blackhole)
	} else {
		m.front.link.Set(proxy.Pass)
	}
}

// closeFront stops m's front proxy.
func (m *member) closeFront() {
	if m.front != nil {
		_ = m.front.px.Close()
		m.front.link.Set(proxy.Reset)
	}
}
