package realnet

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// Packet-level partitions (ClusterOptions.Netns): each member runs in a
// network namespace of its own, joined to the runner's by a veth pair on a
// bridge, and talks to the others directly (no proxy). A partition is an
// nftables set per member of the peers whose packets its input hook drops,
// so the sender's SYNs and segments vanish without an error, as on a cut
// cable; healing empties the sets and TCP retransmission carries on. The
// runner and its clients reach every member over the bridge. Needs root,
// ip(8) and nft(8); there is no added latency (tc netem is not assumed).

// ErrNoNetns says packet-level partitions cannot be made on this machine.
var ErrNoNetns = errors.New("packet-level partitions unavailable")

// Fixed ports: every member has a namespace, so they never clash.
const (
	netnsRaftPort    = "7000"
	netnsHTTPPort    = "7001"
	netnsControlPort = "7002"
)

// netnsNet is the namespaces, veths and bridge of one run.
type netnsNet struct {
	prefix string // 6 characters, so interface names stay under 16
	bridge string
	ns, ip map[string]string
}

// NetnsSupport reports why packet-level partitions cannot be made here,
// or nil: it needs root, ip(8) and nft(8), and creates and removes a
// namespace to be sure.
func NetnsSupport() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: needs root", ErrNoNetns)
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s(8) not found", ErrNoNetns, tool)
		}
	}
	probe := "rnprobe" + randomHex(3)
	if err := run("ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("%w: %w", ErrNoNetns, err)
	}
	defer func() { _ = run("ip", "netns", "del", probe) }()
	if err := nft(probe, "add table inet realnet\n"); err != nil {
		return fmt.Errorf("%w: %w", ErrNoNetns, err)
	}
	return nil
}

// newNetns lays out a namespace per member on a fresh /24.
func newNetns(ids []string) (_ *netnsNet, err error) {
	if len(ids) > 250 {
		return nil, fmt.Errorf("%w: %d members", ErrNoNetns, len(ids))
	}
	b := make([]byte, 2)
	_, _ = rand.Read(b)
	subnet := fmt.Sprintf("10.%d.%d", 200+int(b[0])%50, b[1])
	n := &netnsNet{prefix: "rn" + randomHex(2), ns: map[string]string{}, ip: map[string]string{}}
	n.bridge = n.prefix + "br"
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	if err := runAll([][]string{
		{"ip", "link", "add", n.bridge, "type", "bridge"},
		{"ip", "addr", "add", subnet + ".254/24", "dev", n.bridge},
		{"ip", "link", "set", n.bridge, "up"},
	}); err != nil {
		return nil, err
	}
	for i, id := range ids {
		ns, host, peer := fmt.Sprintf("%sn%d", n.prefix, i+1), fmt.Sprintf("%sh%d", n.prefix, i+1), fmt.Sprintf("%sp%d", n.prefix, i+1)
		ip := fmt.Sprintf("%s.%d", subnet, i+1)
		if err := run("ip", "netns", "add", ns); err != nil {
			return nil, err
		}
		n.ns[id], n.ip[id] = ns, ip
		if err := runAll([][]string{
			{"ip", "link", "add", host, "type", "veth", "peer", "name", peer},
			{"ip", "link", "set", peer, "netns", ns},
			{"ip", "-n", ns, "link", "set", peer, "name", "eth0"},
			{"ip", "-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
			{"ip", "-n", ns, "link", "set", "eth0", "up"},
			{"ip", "-n", ns, "link", "set", "lo", "up"},
			{"ip", "link", "set", host, "master", n.bridge},
			{"ip", "link", "set", host, "up"},
		}); err != nil {
			return nil, err
		}
		if err := nft(ns, "table inet realnet {\n set cut { type ipv4_addr; }\n"+
			" chain in { type filter hook input priority 0; policy accept; ip saddr @cut drop; }\n}\n"); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// addr is member id's address on port.
func (n *netnsNet) addr(id, port string) string { return n.ip[id] + ":" + port }

// command runs bin with args inside member id's namespace.
func (n *netnsNet) command(id, bin string, args []string) (string, []string) {
	return "ip", append([]string{"netns", "exec", n.ns[id], bin}, args...)
}

// cut makes every member drop the packets of the peers pairs cut it from,
// and only those.
func (n *netnsNet) cut(pairs [][2]string) error {
	drop := map[string][]string{}
	for _, p := range pairs {
		drop[p[0]] = append(drop[p[0]], n.ip[p[1]])
		drop[p[1]] = append(drop[p[1]], n.ip[p[0]])
	}
	var errs []error
	for id, ns := range n.ns {
		script := "flush set inet realnet cut\n"
		if ips := drop[id]; len(ips) > 0 {
			sort.Strings(ips)
			script += "add element inet realnet cut { " + strings.Join(ips, ", ") + " }\n"
		}
		errs = append(errs, nft(ns, script))
	}
	return errors.Join(errs...)
}

// close removes the namespaces (and with them their veth ends) and the
// bridge.
func (n *netnsNet) close() {
	for _, ns := range n.ns {
		_ = run("ip", "netns", "del", ns)
	}
	_ = run("ip", "link", "del", n.bridge)
}

// nft runs an nft script inside namespace ns.
func nft(ns, script string) error {
	cmd := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", ns, err, bytes.TrimSpace(out))
	}
	return nil
}

func runAll(cmds [][]string) error {
	for _, c := range cmds {
		if err := run(c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func run(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
