// Command maelstrom-lockstep is lockstep as a Maelstrom node: it speaks
// the Maelstrom protocol on stdin/stdout (logs go to stderr only) and
// serves the lin-kv workload and lockstep's lock workload, each on a
// hashicorp/raft group. Raft's RPCs (core/raftlink) and commands forwarded
// to a group's leader (core/forward) travel on a core/link made of
// Maelstrom messages. See README, "Maelstrom".
//
//	maelstrom test -w lin-kv --bin ./maelstrom-lockstep --node-count 3 --time-limit 20 --nemesis partition
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"

	"github.com/lockstep/lockstep/core/node"
	"github.com/lockstep/lockstep/maelstrom"
	"github.com/lockstep/lockstep/maelstrom/server"
)

func main() {
	bug := flag.String("bug", "", "turn on one of core/node's deliberate bugs (for checking the checker): follower-grant, local-renew, ...")
	verbose := flag.Bool("v", false, "log at debug level")
	flag.Parse()

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	n := maelstrom.NewNode(maelstrom.Options{Logger: logger})
	timing := server.DefaultTiming()
	timing.RaftLogs = os.Stderr
	srv := server.New(n, server.Options{Logger: logger, Timing: timing, Bug: node.Bug(*bug)})
	err := n.Run(context.Background(), os.Stdin, os.Stdout)
	if cerr := srv.Close(); cerr != nil {
		logger.Warn("shutdown", "err", cerr)
	}
	if err != nil {
		logger.Error("maelstrom node failed", "err", err)
		os.Exit(1)
	}
}
