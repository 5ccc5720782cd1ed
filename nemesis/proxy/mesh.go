package proxy

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// Mesh is the proxied network of one cluster: member i reaches member j
// through Addr(i, j), a proxy of its own whose link is i->j. Partitions
// are link states: Cut blackholes both directions of every given pair.
type Mesh struct {
	members []string
	links   map[[2]string]*Link
	proxies map[[2]string]*Proxy
}

// MeshOptions configure a Mesh.
type MeshOptions struct {
	// Members lists member ids in a fixed order.
	Members []string
	// Targets maps each member to the address its peers must reach.
	Targets map[string]string
	// Identify, when set, names the member that opened a connection from
	// its remote address. A member may dial through another member's proxy
	// (Raft spreads its configuration, addresses included, by snapshot), so
	// a connection is carried by the link of the member that really opened
	// it; unidentified connections keep the proxy's own link.
	Identify func(remote net.Addr) (member string, ok bool)
}

// NewMesh starts a proxy for every ordered pair of distinct members.
func NewMesh(opts MeshOptions) (*Mesh, error) {
	m := &Mesh{members: slices.Clone(opts.Members), links: map[[2]string]*Link{}, proxies: map[[2]string]*Proxy{}}
	for _, from := range m.members {
		for _, to := range m.members {
			if from != to {
				m.links[[2]string{from, to}] = NewLink(from + "->" + to)
			}
		}
	}
	for _, from := range m.members {
		for _, to := range m.members {
			if from == to {
				continue
			}
			target, ok := opts.Targets[to]
			if !ok {
				_ = m.Close()
				return nil, fmt.Errorf("proxy mesh: no target for %s", to)
			}
			own := m.links[[2]string{from, to}]
			p, err := Listen("127.0.0.1:0", target, m.router(own, to, opts.Identify))
			if err != nil {
				_ = m.Close()
				return nil, err
			}
			m.proxies[[2]string{from, to}] = p
		}
	}
	return m, nil
}

func (m *Mesh) router(own *Link, to string, identify func(net.Addr) (string, bool)) func(net.Addr) *Link {
	return func(remote net.Addr) *Link {
		if identify == nil {
			return own
		}
		if from, ok := identify(remote); ok {
			if l := m.links[[2]string{from, to}]; l != nil {
				return l
			}
		}
		return own
	}
}

// Addr is where from reaches to.
func (m *Mesh) Addr(from, to string) string {
	if p := m.proxies[[2]string{from, to}]; p != nil {
		return p.Addr()
	}
	return ""
}

// Link is the directed link from -> to, or nil.
func (m *Mesh) Link(from, to string) *Link { return m.links[[2]string{from, to}] }

// Cut replaces the set of severed links: both directions of every pair
// blackhole, every other link passes. Cut(nil) heals.
func (m *Mesh) Cut(pairs [][2]string) {
	cut := map[[2]string]bool{}
	for _, p := range pairs {
		cut[p], cut[[2]string{p[1], p[0]}] = true, true
	}
	for key, l := range m.links {
		if cut[key] {
			l.Set(Blackhole)
		} else if st, _ := l.State(); st != Pass {
			l.Set(Pass)
		}
	}
}

// SetDelay gives every link the same one-way latency.
func (m *Mesh) SetDelay(d time.Duration) {
	for _, l := range m.links {
		l.SetDelay(d)
	}
}

// Close stops every proxy.
func (m *Mesh) Close() error {
	var errs []error
	for _, p := range m.proxies {
		errs = append(errs, p.Close())
	}
	for _, l := range m.links {
		l.Set(Reset)
	}
	return errors.Join(errs...)
}
