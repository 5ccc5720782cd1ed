package nemesis

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// call is one Cluster method call seen by fakeCluster.
type call struct {
	at     time.Duration // since the fake was made (virtual inside synctest)
	op     string
	id     string // node id, or "" for Cut
	arg    any    // offset, rate, jump, disk delay/fail, cut pairs, client
	leader string // the leader when the call was made
}

type diskFault struct {
	delay time.Duration
	fail  bool
}

// fakeCluster is an in-memory Cluster that records every call and tracks
// which faults are still in place.
type fakeCluster struct {
	mu      sync.Mutex
	born    time.Time
	nodes   []string
	leader  string // "" when no leader is known
	clients int
	calls   []call
	// errs makes a call fail, keyed "Op id" (e.g. "WipeDisk n3").
	errs map[string]error
	// onFault, if set, runs (locked) after a Cut, Crash, WipeDisk or Pause,
	// e.g. to elect a new leader.
	onFault func(f *fakeCluster)

	cut     [][2]string
	down    map[string]string // id -> "crashed" or "wiped"
	paused  map[string]bool
	offset  map[string]time.Duration
	rate    map[string]float64
	disk    map[string]diskFault
	timeout time.Duration
}

var (
	_ Cluster       = (*fakeCluster)(nil)
	_ electionTimer = (*fakeCluster)(nil)
)

func newFake(n int, leader string) *fakeCluster {
	f := &fakeCluster{
		born: time.Now(), leader: leader, clients: 3, timeout: 200 * time.Millisecond,
		down: map[string]string{}, paused: map[string]bool{},
		offset: map[string]time.Duration{}, rate: map[string]float64{}, disk: map[string]diskFault{},
	}
	for i := range n {
		f.nodes = append(f.nodes, fmt.Sprintf("n%d", i+1))
	}
	return f
}

func (f *fakeCluster) log(op, id string, arg any) {
	f.calls = append(f.calls, call{at: time.Since(f.born), op: op, id: id, arg: arg, leader: f.leader})
}

func (f *fakeCluster) faulted() {
	if f.onFault != nil {
		f.onFault(f)
	}
}

func (f *fakeCluster) Nodes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.nodes)
}

func (f *fakeCluster) Leader() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader, f.leader != ""
}

func (f *fakeCluster) Cut(pairs [][2]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("Cut", "", slices.Clone(pairs))
	f.cut = slices.Clone(pairs)
	if len(pairs) > 0 {
		f.faulted()
	}
}

func (f *fakeCluster) Crash(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("Crash", id, nil)
	if err := f.errs["Crash "+id]; err != nil {
		return err
	}
	f.down[id] = "crashed"
	f.faulted()
	return nil
}

func (f *fakeCluster) WipeDisk(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("WipeDisk", id, nil)
	if err := f.errs["WipeDisk "+id]; err != nil {
		return err
	}
	f.down[id] = "wiped"
	f.faulted()
	return nil
}

func (f *fakeCluster) Restart(id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("Restart", id, nil)
	if err := f.errs["Restart "+id]; err != nil {
		return err
	}
	if f.down[id] == "" {
		return fmt.Errorf("restart %s: not down", id)
	}
	delete(f.down, id)
	return nil
}

func (f *fakeCluster) Pause(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("Pause", id, nil)
	f.paused[id] = true
	f.faulted()
}

func (f *fakeCluster) Resume(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("Resume", id, nil)
	delete(f.paused, id)
}

func (f *fakeCluster) SetClockOffset(id string, offset time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("SetClockOffset", id, offset)
	f.offset[id] = offset
}

func (f *fakeCluster) SetClockRate(id string, rate float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("SetClockRate", id, rate)
	f.rate[id] = rate
}

func (f *fakeCluster) JumpClock(id string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("JumpClock", id, d)
}

func (f *fakeCluster) SetDiskFault(id string, delay time.Duration, fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("SetDiskFault", id, diskFault{delay, fail})
	f.disk[id] = diskFault{delay, fail}
}

func (f *fakeCluster) PauseClient(client int, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.log("PauseClient", "", client)
}

func (f *fakeCluster) Clients() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.clients
}

// ElectionTimeout makes the fake an electionTimer when timeout is set.
func (f *fakeCluster) ElectionTimeout() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.timeout
}

// lingering lists faults still in place; a healed cluster has none.
func (f *fakeCluster) lingering() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	if len(f.cut) > 0 {
		out = append(out, fmt.Sprintf("cut %v", f.cut))
	}
	for id, how := range f.down {
		out = append(out, id+" "+how)
	}
	for id := range f.paused {
		out = append(out, id+" paused")
	}
	for id, off := range f.offset {
		if off != 0 {
			out = append(out, fmt.Sprintf("%s offset %s", id, off))
		}
	}
	for id, r := range f.rate {
		if r != 1 {
			out = append(out, fmt.Sprintf("%s rate %v", id, r))
		}
	}
	for id, df := range f.disk {
		if df != (diskFault{}) {
			out = append(out, fmt.Sprintf("%s disk %+v", id, df))
		}
	}
	slices.Sort(out)
	return out
}

func (f *fakeCluster) callLog() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// window is one recorded fault.
type window struct {
	name, target string
	start, end   time.Time
}

// fakeRecorder collects fault windows.
type fakeRecorder struct {
	mu      sync.Mutex
	windows []window
}

var _ Recorder = (*fakeRecorder)(nil)

func (r *fakeRecorder) Fault(name, target string, start, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.windows = append(r.windows, window{name, target, start, end})
}

func (r *fakeRecorder) all() []window {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.windows)
}

// mustByName returns the catalogue entry or fails the test.
func mustByName(t *testing.T, name string) Nemesis {
	t.Helper()
	n, ok := ByName(name)
	if !ok {
		t.Fatalf("nemesis %q not in catalogue", name)
	}
	return n
}
