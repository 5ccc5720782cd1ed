package main

import (
	"flag"

	"github.com/lockstep/lockstep/core/lockd"
)

// memberSettings are the flags a member process and every member of lockd
// dev share: one struct, so the two forms cannot drift apart.
type memberSettings struct {
	logStore   string
	raftLog    bool
	limits     limits
	commitPath commitPathArgs
	acl        aclArgs
	observe    observeArgs
}

func (s *memberSettings) register(fs *flag.FlagSet) {
	fs.BoolVar(&s.raftLog, "raft-log", false, "print hashicorp/raft's own warnings")
	fs.StringVar(&s.logStore, "log-store", "wal", "Raft log store: wal (one fdatasync per batch) or bolt (raft-boltdb/v2)")
	s.limits.register(fs)
	s.commitPath.register(fs)
	s.acl.register(fs)
	s.observe.register(fs)
}

func (s *memberSettings) check() error {
	if err := s.limits.check(); err != nil {
		return err
	}
	if err := s.commitPath.check(); err != nil {
		return err
	}
	if err := s.observe.check(); err != nil {
		return err
	}
	s.limits.service.Namespaces, s.limits.service.NamespaceLimit = s.observe.namespaceList(), s.observe.nsLimit
	return nil
}

// apply fills the member options these flags own. Tune gets the
// commit-path knobs; a member process adds its Raft timing on top.
func (s *memberSettings) apply(o *lockd.Options) {
	o.Lock, o.Service, o.Server = s.limits.lock, s.limits.service, s.limits.server
	o.RaftLogs, o.LogStore = raftLogs(s.raftLog), lockd.LogStoreKind(s.logStore)
	o.ACLBootstrapToken, o.Trace = s.acl.token(), s.observe.trace
	o.Tune = s.commitPath.tune
	s.commitPath.member(o)
}
