package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/lockstep/lockstep/checker"
	"github.com/lockstep/lockstep/core/lock"
	"github.com/lockstep/lockstep/nemesis"
)

// The seam between the simulator and other worlds (scenarios/realnet):
// one seed derivation, one schedule draw, one workload generator, one
// recorder and one report layout, so that a scenario and a seed mean the
// same run everywhere the lock server runs.

// RunSeeds are the per-layer seeds one run seed derives.
type RunSeeds struct {
	Network, Cluster, Workload, Schedule, Nemesis uint64
}

// DeriveSeeds derives every layer's seed from the run seed.
func DeriveSeeds(seed int64) RunSeeds {
	r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
	return RunSeeds{Network: r.Uint64(), Cluster: r.Uint64(), Workload: r.Uint64(), Schedule: r.Uint64(), Nemesis: r.Uint64()}
}

// DrawSchedule is the scenario's fault schedule for rs: the pinned one, or
// one drawn from the scenario's nemeses.
func (s Scenario) DrawSchedule(rs RunSeeds) nemesis.Schedule {
	if len(s.Schedule) > 0 || len(s.Nemeses) == 0 {
		return s.Schedule
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return nemesis.RandomSchedule(rand.New(rand.NewPCG(rs.Schedule, 1)), s.Nemeses, ms(s.DurationMs), nemesis.ScheduleOptions{
		FaultMin: ms(s.FaultMs[0]), FaultMax: ms(s.FaultMs[1]), GapMin: ms(s.GapMs[0]), GapMax: ms(s.GapMs[1]),
		Warmup: ms(s.WarmupMs), Cooldown: ms(s.CooldownMs),
	})
}

// NemesisRand is the nemeses' own randomness for rs.
func NemesisRand(rs RunSeeds) *rand.Rand { return rand.New(rand.NewPCG(rs.Nemesis, 2)) }

// CheckOptions are the checker options the scenario is judged with.
func (s Scenario) CheckOptions() checker.Options { return s.options() }

// Params lists the derived parameters printed before a run.
func Params(s Scenario, opts RunOptions, sched nemesis.Schedule, rs RunSeeds) []Param {
	return params(s, opts, sched, rs.Network, rs.Workload, rs.Schedule, rs.Nemesis)
}

// Harness drives a scenario's workload against a Target and records what
// the clients saw, the committed trace fed to it, and the fault windows.
type Harness struct {
	rec *recorder
	wl  *workload
}

var _ nemesis.Recorder = (*Harness)(nil)

// NewHarness builds the scenario's clients on t, seeded by rs.
func NewHarness(s Scenario, t Target, rs RunSeeds) (*Harness, error) {
	rec := newRecorder()
	wl, err := newWorkload(s.Workload, t, rec, rs.Workload)
	if err != nil {
		return nil, err
	}
	return &Harness{rec: rec, wl: wl}, nil
}

// Recorder receives fault windows (nemesis.Run's recorder).
func (h *Harness) Recorder() nemesis.Recorder { return h.rec }

// Run drives every client until ctx ends.
func (h *Harness) Run(ctx context.Context) { h.wl.run(ctx) }

// Drive runs the clients and the fault schedule sched on c together for
// the scenario's duration, healing every fault with heal when the schedule
// ends and again once both are done. A nemesis error counts only if it
// came before the end.
func (h *Harness) Drive(ctx context.Context, s Scenario, c nemesis.Cluster, sched nemesis.Schedule, rs RunSeeds, heal func()) error {
	runCtx, cancel := context.WithTimeout(ctx, time.Duration(s.DurationMs)*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	var nemErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		h.Run(runCtx)
	}()
	go func() {
		defer wg.Done()
		nemErr = nemesis.Run(runCtx, c, sched, NemesisRand(rs), h.rec)
		heal()
	}()
	wg.Wait()
	heal()
	if nemErr != nil && runCtx.Err() == nil {
		return fmt.Errorf("nemesis: %w", nemErr)
	}
	return nil
}

// PauseClient freezes workload client i for d (nemesis.Cluster).
func (h *Harness) PauseClient(i int, d time.Duration) { h.wl.pause(i, d) }

// Clients is the number of workload clients (nemesis.Cluster).
func (h *Harness) Clients() int { return h.wl.size() }

// NodeStarted tells the recorder a node (re)started: its events number
// from its snapshot again. Its stores and incarnation are not known here,
// so its restarts say only what it applied.
func (h *Harness) NodeStarted(node string) { h.rec.restarted(node, -1, nil) }

// Event records a committed event a node applied (freed events excluded).
func (h *Harness) Event(node string, ev checker.TraceEvent) { h.rec.traceEvent(node, ev) }

// Applied records what a node applied at an index: the hash of the entry
// and the digest of the state it left, seen at time at.
func (h *Harness) Applied(node string, group int, index uint64, entryHash, stateDigest uint64, logTime int64, at time.Time) {
	h.rec.recordApplied(node, group, index, appliedAt{node: node, entry: entryHash, state: stateDigest}, logTime, at)
}

// Woke records a wake-up of blocked callers by the entry at index.
func (h *Harness) Woke(group int, resource string, index uint64, lease lock.LeaseID, woken int) {
	h.rec.wake(group, resource, index, lease, woken)
}

// Fault records a fault window outside the nemeses (e.g. the shutdown).
func (h *Harness) Fault(name, target string, start, end time.Time) {
	h.rec.Fault(name, target, start, end)
}

// History assembles the run's history.
func (h *Harness) History(seed int64, scenario string) *checker.History {
	return h.rec.history(seed, scenario)
}

// SaveReport writes a run's report to RunDir(resultsDir, ...): the
// checker's files, params.json (the Outcome) and each extra value as
// <name>.json. It fills o.Dir and o.Files.
func SaveReport(ctx context.Context, resultsDir string, o *Outcome, h *checker.History, extra map[string]any) error {
	dir := RunDir(resultsDir, o.Scenario, o.Seed, o.Bug)
	files, err := checker.WriteReport(ctx, dir, h, o.Result, checker.ReportOptions{Always: true})
	if err != nil {
		return err
	}
	write := func(file string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		p := filepath.Join(dir, file)
		files = append(files, p)
		return os.WriteFile(p, b, 0o644)
	}
	o.Dir = dir
	if err := write("params.json", o); err != nil {
		return err
	}
	for name, v := range extra {
		if err := write(name+".json", v); err != nil {
			return err
		}
	}
	o.Files = files
	return nil
}
