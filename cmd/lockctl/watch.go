package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/api"
	"github.com/lockstep/lockstep/core/client"
)

// watchRetry paces reconnects after a watch stream broke.
const watchRetry = 500 * time.Millisecond

// maxWatchLine bounds one line of a watch stream.
const maxWatchLine = 1 << 20

// watchFlags are the options of watch.
type watchFlags struct {
	prefix bool
	start  string
	count  int
}

// watchLine is one printed event: the event with its shard and index.
type watchLine struct {
	Shard int    `json:"shard"`
	Index uint64 `json:"index"`
	api.WatchEvent
}

// errCompacted ends a watch that cannot resume without a gap.
var errCompacted = errors.New("events were compacted: re-read status, then watch from now")

func watchCommand(g *globals) *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch RESOURCE",
		Short: "Print RESOURCE's grants, releases, expirations and queue changes as they happen",
		Long: `watch follows RESOURCE (or, with --prefix, every resource whose name
starts with it, on every shard) and prints one line per event: shard,
log index, kind (grant, release, expire, enqueue, join, cancel), client,
fencing token, mode and lease fingerprint. The member answering serves
the events from its own applied log, in log order per shard.

If the stream breaks, watch reconnects (to the next endpoint) and
resumes after the last index it printed on each shard, so no event is
lost or printed twice. If the member no longer holds those events it
exits 1 (compacted): re-read status and watch again. --start resumes
from SHARD:INDEX pairs, the index after the last one seen.`,
		Example: `  lockctl watch job
  lockctl watch tenant-a: --prefix --output table
  lockctl watch job --start 2:1041 --count 10`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.count < 0 {
				return usageError("--count must be >= 0")
			}
			pos := map[int]uint64{}
			if f.start != "" {
				var err error
				if pos, err = api.ParseWatchStart(f.start); err != nil {
					return usageError("--%w", err)
				}
			}
			return runWatch(cmd.Context(), g, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f, pos)
		},
	}
	cmd.Flags().BoolVar(&f.prefix, "prefix", false, "watch every resource whose name starts with RESOURCE")
	cmd.Flags().StringVar(&f.start, "start", "", "resume from SHARD:INDEX[,SHARD:INDEX...] (default: from now)")
	cmd.Flags().IntVar(&f.count, "count", 0, "exit after this many events (0: until interrupted)")
	return cmd
}

// runWatch streams events until ctx ends (exit 0), --count events were
// printed, or the watch cannot resume. pos is, per shard, the next index
// to print; it moves with every message, so a reconnect resumes exactly.
func runWatch(ctx context.Context, g *globals, stdout, stderr io.Writer, resource string, f watchFlags, pos map[int]uint64) error {
	endpoints, err := g.endpointList()
	if err != nil {
		return err
	}
	hc, err := g.tls.httpClient()
	if err != nil {
		return err
	}
	p := &eventPrinter{g: g, w: stdout, left: f.count}
	for attempt := 0; ; attempt++ {
		base := endpoints[attempt%len(endpoints)]
		err := watchOnce(ctx, hc, g.token, base, resource, f.prefix, pos, p)
		switch {
		case ctx.Err() != nil, errors.Is(err, errCountReached):
			return nil
		case errors.Is(err, errCompacted):
			return failed(err)
		case errors.As(err, new(*exitError)):
			return err // a wrong command line (no TLS flags for a TLS cluster)
		}
		var ae *apiError
		if errors.As(err, &ae) && !ae.elsewhere() {
			return failed(err)
		}
		fmt.Fprintf(stderr, "lockctl: watch on %s broke (%v); resuming\n", base, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(watchRetry):
		}
	}
}

// errCountReached stops a watch after --count events.
var errCountReached = errors.New("count reached")

// watchOnce runs one stream against base, advancing pos.
func watchOnce(ctx context.Context, hc *http.Client, token, base, resource string, prefix bool, pos map[int]uint64, p *eventPrinter) error {
	q := url.Values{"resource": {resource}}
	if prefix {
		q.Set("prefix", "true")
	}
	if len(pos) > 0 {
		q.Set("start", api.FormatWatchStart(pos))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+api.PathWatch+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", base+api.PathWatch, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		if client.PlainHTTPToTLS(resp.StatusCode, raw) {
			return errSpeaksTLS(base)
		}
		ae := replyError(resp.StatusCode, raw)
		if ae.body.Code == api.CodeCompacted {
			return fmt.Errorf("%w (%s)", errCompacted, ae.body.Error)
		}
		return ae
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(nil, maxWatchLine)
	for lines.Scan() {
		var m api.WatchMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			return fmt.Errorf("decode watch line: %w", err)
		}
		switch {
		case m.Error != nil && m.Error.Code == api.CodeCompacted:
			return fmt.Errorf("%w (%s)", errCompacted, m.Error.Error)
		case m.Error != nil:
			return &apiError{status: http.StatusOK, body: *m.Error}
		case m.Start != nil:
			for sh, idx := range m.Start {
				if _, ok := pos[sh]; !ok {
					pos[sh] = idx
				}
			}
			continue
		}
		pos[m.Shard] = m.Index + 1
		for _, ev := range m.Events {
			if err := p.print(watchLine{Shard: m.Shard, Index: m.Index, WatchEvent: ev}); err != nil {
				return err
			}
		}
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("read watch stream: %w", err)
	}
	return errors.New("stream ended")
}

// eventPrinter prints events as JSON lines or table rows, and counts them
// down for --count.
type eventPrinter struct {
	g      *globals
	w      io.Writer
	left   int
	headed bool
}

func (p *eventPrinter) print(l watchLine) error {
	var err error
	if p.g.output == outputTable {
		if !p.headed {
			p.headed = true
			_, err = fmt.Fprintf(p.w, "%-5s %-8s %-7s %-24s %-16s %-6s %-9s %s\n",
				"SHARD", "INDEX", "KIND", "RESOURCE", "CLIENT", "TOKEN", "MODE", "LEASE")
		}
		if err == nil {
			_, err = fmt.Fprintf(p.w, "%-5d %-8d %-7s %-24s %-16s %-6s %-9s %s\n", l.Shard, l.Index, l.Kind,
				l.Resource, l.ClientID, token(l.FencingToken), l.Mode, l.LeaseFingerprint)
		}
	} else {
		enc := json.NewEncoder(p.w)
		enc.SetEscapeHTML(false)
		err = enc.Encode(l)
	}
	if err != nil {
		return fmt.Errorf("print event: %w", err)
	}
	if p.left > 0 {
		p.left--
		if p.left == 0 {
			return errCountReached
		}
	}
	return nil
}
