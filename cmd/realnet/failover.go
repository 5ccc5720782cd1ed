package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstep/lockstep/scenarios"
	"github.com/lockstep/lockstep/scenarios/realnet"
)

// failover measures leader kill -> first grant and partition heal -> first
// grant with lockd's default Raft timing and, with -tuned-args, with the
// tuned one, and prints (and with -out writes) a Markdown table.
func failover(ctx context.Context, o options, bin string, w io.Writer) int {
	configs := [][2]string{{"defaults", ""}}
	if o.tuned != "" {
		configs = append(configs, [2]string{"tuned", o.tuned})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s with `go run ./cmd/realnet -failover %d", time.Now().UTC().Format("2006-01-02"), o.failover)
	if o.tuned != "" {
		fmt.Fprintf(&b, " -tuned-args '%s'", o.tuned)
	}
	fmt.Fprintf(&b, "`: 3 lockd processes (WAL, fsync) on loopback through the proxy mesh, no other load; %d leader kills (kill -9, then restart) and %d full partitions of 2 s then heal. Probing clients send a try-lock of a fresh resource to every member every 5 ms; the time is from the fault (or heal) to the first granted reply of an attempt sent after it.\n\n", o.failover, o.failover)
	b.WriteString("| Raft timing | lockd flags | kill→grant p50 | p90 | p99 | min–max | heal→grant p50 | p99 | min–max |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, cfg := range configs {
		dir, err := os.MkdirTemp("", "realnet-failover-")
		if err != nil {
			fmt.Fprintln(w, "realnet:", err)
			return scenarios.ExitCrash
		}
		res, err := realnet.MeasureFailover(ctx, realnet.FailoverOptions{
			Bin: bin, Dir: dir, Rounds: o.failover, LockdArgs: strings.Fields(cfg[1]), PartitionHold: 2 * time.Second,
		})
		_ = os.RemoveAll(dir)
		if err != nil {
			fmt.Fprintln(w, "realnet: failover:", err)
			return scenarios.ExitCrash
		}
		flags := cfg[1]
		if flags == "" {
			flags = "(none: heartbeat 500ms, election 500ms, leader lease 250ms)"
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
		p := realnet.Percentile
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s–%s | %s | %s | %s–%s |\n", cfg[0], flags,
			ms(p(res.Kill, 0.5)), ms(p(res.Kill, 0.9)), ms(p(res.Kill, 0.99)), ms(p(res.Kill, 0)), ms(p(res.Kill, 1)),
			ms(p(res.Heal, 0.5)), ms(p(res.Heal, 0.99)), ms(p(res.Heal, 0)), ms(p(res.Heal, 1)))
		fmt.Fprintf(w, "%s kill: %v\n%s heal: %v\n", cfg[0], res.Kill, cfg[0], res.Heal)
	}
	fmt.Fprint(w, b.String())
	if o.out != "" {
		if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
			fmt.Fprintln(w, "realnet:", err)
			return scenarios.ExitCrash
		}
		if err := os.WriteFile(o.out, []byte("# Failover on real TCP\n\n"+b.String()), 0o644); err != nil {
			fmt.Fprintln(w, "realnet:", err)
			return scenarios.ExitCrash
		}
	}
	return scenarios.ExitOK
}
