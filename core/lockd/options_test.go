package lockd_test

import (
	"testing"

	"github.com/lockstep/lockstep/core/lockd"
	"github.com/lockstep/lockstep/core/server"
	"github.com/lockstep/lockstep/core/service"
)

// TestOptionsValidate: goal — Start refuses options it cannot run with
// before it opens anything, and accepts the zero values that have
// defaults. Method: a valid base, then one field broken at a time.
func TestOptionsValidate(t *testing.T) {
	base := lockd.Options{ID: "n1", RaftAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir()}
	if err := base.Validate(); err != nil {
		t.Fatalf("base options: %v", err)
	}
	for name, broken := range map[string]func(*lockd.Options){
		"no id":            func(o *lockd.Options) { o.ID = "" },
		"no data dir":      func(o *lockd.Options) { o.DataDir = "" },
		"negative shards":  func(o *lockd.Options) { o.Shards = -1 },
		"unknown store":    func(o *lockd.Options) { o.LogStore = "tape" },
		"unknown wal mode": func(o *lockd.Options) { o.WALMode = "some" },
		"service":          func(o *lockd.Options) { o.Service = service.Config{MaxInFlight: -1} },
		"http":             func(o *lockd.Options) { o.Server = server.Config{ReadTimeout: -1} },
	} {
		o := base
		broken(&o)
		err := o.Validate()
		if err == nil {
			t.Errorf("%s: Validate accepted it", name)
			continue
		}
		if _, startErr := lockd.Start(o); startErr == nil || startErr.Error() != err.Error() {
			t.Errorf("%s: Start %v, want Validate's error %v", name, startErr, err)
		}
	}
}
