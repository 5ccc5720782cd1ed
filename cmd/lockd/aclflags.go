package main

import (
	"flag"
	"os"
)

// aclEnv carries the bootstrap token when it should not show in ps.
const aclEnv = "LOCKSTEP_ACL_BOOTSTRAP_TOKEN"

// aclArgs is the ACL bootstrap of a member or of lockd dev.
type aclArgs struct {
	bootstrapToken string
}

func (a *aclArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.bootstrapToken, "acl-bootstrap-token", os.Getenv(aclEnv),
		"turn ACLs on for the whole cluster with this secret (16+ characters) as the first admin token; kept in the metadata group, so a restart needs no flag (default $"+aclEnv+"; empty: ACLs stay as the cluster has them, off on a new one)")
}
