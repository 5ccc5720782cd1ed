package main

import (
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockstep/lockstep/core/api"
)

func acquireManyCommand(g *globals) *cobra.Command {
	var a acquireFlags
	var canonical bool
	cmd := &cobra.Command{
		Use:   "acquire-many RESOURCE...",
		Short: "Take leases on several resources at once and print them",
		Long: `acquire-many takes every RESOURCE or none. Resources on one shard are
granted atomically in one log entry (hash tags, as in {job}a {job}b,
place resources on one shard). Resources on several shards are refused
(cross_shard) unless --canonical, which takes the shards one by one in
ascending order, releasing what it took if a later shard refuses.
Each lease is released on its own (lockctl release RESOURCE LEASE_ID).`,
		Example: `  lockctl acquire-many '{job}in' '{job}out' --ttl 30s
  lockctl acquire-many a b c --canonical --wait 10s --output table`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.check(); err != nil {
				return err
			}
			req := api.AcquireManyRequest{Resources: args, ClientID: g.clientIDOrDefault(), TTLMs: a.ttl.Milliseconds(),
				Mode: api.Mode(a.mode), WaitMs: a.wait.Milliseconds(), RequestID: a.wireRequestID(args...), Policy: a.policy(),
				GraceMs: a.grace.Milliseconds()}
			if canonical {
				req.Order = api.OrderCanonical
			}
			var out api.AcquireManyResponse
			if err := call(cmd.Context(), g, http.MethodPost, api.PathAcquireMany, req, &out, a.wait); err != nil {
				return failed(err)
			}
			if err := g.print(cmd.OutOrStdout(), out); err != nil {
				return failed(err)
			}
			if !out.Granted {
				return &exitError{code: exitNotGranted, err: fmt.Errorf("not granted: %q is held (queue position %d)", out.Blocked, out.QueuePosition)}
			}
			return nil
		},
	}
	a.register(cmd, 30*time.Second, 0)
	cmd.Flags().BoolVar(&canonical, "canonical", false, "allow resources on several shards, taken shard by shard in ascending order")
	return cmd
}
