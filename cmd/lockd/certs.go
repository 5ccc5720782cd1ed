package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockstep/lockstep/core/tlsconf"
)

// certsArgs is the command line of lockd certs.
type certsArgs struct {
	dir, nodes, gateways, clients, hosts string
	days                                 int
}

func certsFlags(a *certsArgs) *flag.FlagSet {
	fs := flag.NewFlagSet("lockd certs", flag.ContinueOnError)
	fs.StringVar(&a.dir, "dir", "", "directory to write the CA, certificates and keys to (what is already there is kept: a second run only adds what is missing)")
	fs.StringVar(&a.nodes, "nodes", "", "member ids to make node certificates for: n1,n2,n3")
	fs.StringVar(&a.gateways, "gateways", "", "gateway names to make serving certificates for")
	fs.StringVar(&a.clients, "clients", "", "client names to make client certificates for")
	fs.StringVar(&a.hosts, "hosts", "", "extra DNS names or IPs the node and gateway certificates are valid for (always: localhost, 127.0.0.1, ::1)")
	fs.IntVar(&a.days, "days", 365, "validity of the certificates in days (the CA gets ten times as long)")
	return fs
}

// runCerts is lockd certs: exit 0 when written, 2 for a wrong command
// line, 1 when writing fails.
func runCerts(args []string, stdout, stderr io.Writer) int {
	var a certsArgs
	err := parse(certsFlags(&a), args)
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout)
		return 0
	}
	plan := tlsconf.Plan{Dir: a.dir, Nodes: list(a.nodes), Gateways: list(a.gateways), Clients: list(a.clients),
		Hosts: list(a.hosts), Validity: time.Duration(a.days) * 24 * time.Hour}
	switch {
	case err != nil:
	case a.dir == "":
		err = errors.New("--dir is required")
	case len(plan.Nodes)+len(plan.Gateways)+len(plan.Clients) == 0:
		err = errors.New("name at least one certificate: --nodes, --gateways or --clients")
	case a.days < 1:
		err = errors.New("--days must be > 0")
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockd certs: %v\n\n", err)
		printUsage(stderr)
		return 2
	}
	out, err := tlsconf.Issue(plan)
	if err != nil {
		fmt.Fprintf(stderr, "lockd certs: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "CA %s: %s (its key %s stays with whoever issues certificates)\n", madeOrKept(out.CAKept), out.CA,
		filepath.Join(a.dir, tlsconf.CAKeyFile))
	for _, kind := range []struct {
		name  string
		pairs map[string]tlsconf.Pair
	}{{"node", out.Nodes}, {"gateway", out.Gateways}, {"client", out.Clients}} {
		for _, n := range slices.Sorted(maps.Keys(kind.pairs)) {
			p := kind.pairs[n]
			fmt.Fprintf(stdout, "%s %s %s: cert %s, key %s\n", kind.name, n, madeOrKept(p.Kept), p.Cert, p.Key)
		}
	}
	return 0
}

// madeOrKept says whether lockd certs wrote a file pair or found it there.
func madeOrKept(kept bool) string {
	if kept {
		return "kept (already there; remove its files to make it again)"
	}
	return "made"
}

// list splits a comma-separated flag value, dropping blanks.
func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
