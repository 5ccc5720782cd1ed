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

// register adds --acl-bootstrap-token with no default: a default read
// from aclEnv would print the secret in lockd -h.
func (a *aclArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.bootstrapToken, "acl-bootstrap-token", "",
		"turn ACLs on for the whole cluster with this secret (16+ characters) as the first admin token; kept in the metadata group, so a restart needs no flag (default $"+aclEnv+"; empty: ACLs stay as the cluster has them, off on a new one)")
}

// token is the flag's secret, else aclEnv's.
func (a *aclArgs) token() string {
	if a.bootstrapToken != "" {
		return a.bootstrapToken
	}
	return os.Getenv(aclEnv)
}
