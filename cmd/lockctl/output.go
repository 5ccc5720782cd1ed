package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/api"
)

// Output formats of --output.
const (
	outputJSON  = "json"
	outputTable = "table"
)

// registerOutput adds --output, with completion of its values.
func (g *globals) registerOutput(root *cobra.Command) {
	root.PersistentFlags().StringVarP(&g.output, "output", "o", outputJSON, "reply format: json or table")
	_ = root.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outputJSON, outputTable}, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses an unknown --output before anything is sent.
func (g *globals) checkOutput() error {
	if g.output != outputJSON && g.output != outputTable {
		return usageError("--output must be json or table, not %q", g.output)
	}
	return nil
}

// print writes a reply in the --output format.
func (g *globals) print(w io.Writer, v any) error {
	if g.output != outputTable {
		return printJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	printTable(tw, v)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print reply: %w", err)
	}
	return nil
}

// printTable renders the replies lockctl prints; anything else as JSON.
func printTable(w io.Writer, v any) {
	switch r := v.(type) {
	case api.AcquireResponse:
		fmt.Fprintln(w, "GRANTED\tLEASE_ID\tFENCING_TOKEN\tEXPIRES_IN_MS\tMODE\tQUEUE_POSITION")
		fmt.Fprintf(w, "%t\t%s\t%s\t%d\t%s\t%d\n", r.Granted, dash(r.LeaseID), token(r.FencingToken), r.ExpiresInMs, dash(string(r.Mode)), r.QueuePosition)
	case api.AcquireManyResponse:
		if !r.Granted {
			fmt.Fprintln(w, "GRANTED\tKIND\tBLOCKED\tQUEUE_POSITION")
			fmt.Fprintf(w, "false\t%s\t%s\t%d\n", r.Kind, dash(r.Blocked), r.QueuePosition)
			return
		}
		fmt.Fprintln(w, "RESOURCE\tLEASE_ID\tFENCING_TOKEN\tEXPIRES_IN_MS\tKIND")
		for _, l := range r.Leases {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", l.Resource, l.LeaseID, l.FencingToken, l.ExpiresInMs, r.Kind)
		}
	case api.ReleaseResponse:
		fmt.Fprintln(w, "RELEASED\tLOG_TIME_MS")
		fmt.Fprintf(w, "%t\t%d\n", r.Released, r.LogTimeMs)
	case api.RenewResponse:
		fmt.Fprintln(w, "FENCING_TOKEN\tEXPIRES_IN_MS")
		fmt.Fprintf(w, "%d\t%d\n", r.FencingToken, r.ExpiresInMs)
	case api.StatusResponse:
		fmt.Fprintln(w, "ROLE\tCLIENT\tMODE\tFENCING_TOKEN\tEXPIRES_IN_MS\tLEASE")
		for _, h := range r.Holders {
			fmt.Fprintf(w, "holder\t%s\t%s\t%d\t%d\t%s\n", h.ClientID, h.Mode, h.FencingToken, h.ExpiresInMs, h.LeaseFingerprint)
		}
		for i, q := range r.Queue {
			fmt.Fprintf(w, "queued #%d\t%s\t%s\t-\t-\t-\n", i+1, q.ClientID, q.Mode)
		}
	case api.ClusterResponse:
		fmt.Fprintln(w, "NODE\tSTATE\tHTTP\tRAFT")
		for _, n := range r.Nodes {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", n.ID, n.State, dash(n.HTTPAddr), n.RaftAddr)
		}
		fmt.Fprintln(w, "\t\t\t")
		fmt.Fprintln(w, "SHARD\tLEADER\tTERM\tCOMMIT_INDEX\tRESOURCES")
		for _, s := range r.Shards {
			fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\n", s.ID, dash(s.Leader), s.Term, s.CommitIndex, s.Resources)
		}
	case heldLease:
		fmt.Fprintln(w, "RESOURCE\tLEASE_ID\tFENCING_TOKEN")
		fmt.Fprintf(w, "%s\t%s\t%d\n", r.Resource, r.LeaseID, r.FencingToken)
	default:
		_ = printJSON(w, v)
	}
}

// heldLease is what lock prints when it holds a lease without a command.
type heldLease struct {
	Resource     string `json:"resource"`
	LeaseID      string `json:"lease_id"`
	FencingToken uint64 `json:"fencing_token"`
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func token(t uint64) string {
	if t == 0 {
		return "-"
	}
	return strconv.FormatUint(t, 10)
}
