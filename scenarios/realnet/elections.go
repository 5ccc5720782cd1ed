package realnet

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Leadership churn, read from hashicorp/raft's own warnings in the
// members' logs (lockd --raft-log): how often a follower stood for
// election and a leader stepped down for want of a quorum. A kill or an
// isolation of a leader costs one of each; more under the same schedule
// is thrash.
const (
	raftElectionLine = "heartbeat timeout reached, starting election"
	raftStepDownLine = "failed to contact quorum of nodes, stepping down"
)

// raftChurn counts those lines in the members' logs; ok is false when no
// member logged Raft's warnings (no --raft-log), so the counts mean
// nothing.
func (c *Cluster) raftChurn(args []string) (elections, stepDowns int, ok bool) {
	for _, a := range args {
		ok = ok || a == "--raft-log" || a == "-raft-log"
	}
	if !ok {
		return 0, 0, false
	}
	for _, m := range c.members {
		f, err := os.Open(m.log)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.Contains(line, raftElectionLine):
				elections++
			case strings.Contains(line, raftStepDownLine):
				stepDowns++
			}
		}
		_ = f.Close()
	}
	return elections, stepDowns, true
}

// churnParam is the report line of raftChurn.
func (c *Cluster) churnParam(args []string) (string, bool) {
	e, s, ok := c.raftChurn(args)
	return fmt.Sprintf("%d elections started, %d leader step-downs", e, s), ok
}
