package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// On a 2-core box the servers, the peers and this load generator share the
// CPU, so throughput is set by how much CPU one lock cycle costs everyone
// together. The machine's busy time over the measurement window, from
// /proc/stat, divided by the cycles done in it, is that cost; it counts the
// load generator too, which is why it is only compared between targets
// driven by the same generator in the same run.

// userHZ is the unit of /proc/stat's counters: USER_HZ, 100 on every Linux
// architecture Go supports (the kernel scales to it for user space).
const userHZ = 100

// cpuTimes is one reading of /proc/stat's aggregate "cpu" line.
type cpuTimes struct {
	busy, total uint64 // jiffies
}

// readCPUTimes reads the aggregate line; ok is false where /proc/stat is
// missing (not Linux) or unreadable.
func readCPUTimes() (cpuTimes, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, false
	}
	t, err := parseCPULine(line)
	return t, err == nil
}

// parseCPULine reads "cpu user nice system idle iowait irq softirq steal
// ...": busy is everything but idle and iowait (guest time is already in
// user and nice, so the guest columns are not added again).
func parseCPULine(line string) (cpuTimes, error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("not an aggregate cpu line: %q", line)
	}
	var t cpuTimes
	for i, f := range fields[1:] {
		if i >= 8 { // guest, guest_nice: counted in user and nice
			break
		}
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("cpu field %d: %w", i+1, err)
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, nil
}

// machineCPU measures the machine's busy time between start and stop.
type machineCPU struct {
	mu           sync.Mutex
	from, to     cpuTimes
	fromAt, toAt time.Time
	started, ok  bool
}

// start takes the first reading (at the end of the warm-up).
func (m *machineCPU) start() {
	t, ok := readCPUTimes()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.from, m.fromAt, m.started, m.ok = t, time.Now(), true, ok
}

// stop takes the second reading; a stop before start measures nothing.
func (m *machineCPU) stop() {
	t, ok := readCPUTimes()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.to, m.toAt, m.ok = t, time.Now(), m.ok && ok && m.started
}

// MachineCPU is the machine's CPU use over a run's measurement window.
type MachineCPU struct {
	// BusyS is the CPU time (all cores) the machine spent busy.
	BusyS float64 `json:"busy_s"`
	// Utilisation is BusyS over the window's wall time times the cores:
	// near 1, the box was CPU-bound.
	Utilisation float64 `json:"utilisation"`
	// PerCycleUs is BusyS per acquire+release cycle, in µs.
	PerCycleUs float64 `json:"per_cycle_us"`
}

// result reports the window for ops cycles; ok is false without readings.
func (m *machineCPU) result(ops int64) (MachineCPU, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ok || m.to.total <= m.from.total {
		return MachineCPU{}, false
	}
	busy := float64(m.to.busy-m.from.busy) / userHZ
	out := MachineCPU{BusyS: busy, Utilisation: float64(m.to.busy-m.from.busy) / float64(m.to.total-m.from.total)}
	if ops > 0 {
		out.PerCycleUs = busy * 1e6 / float64(ops)
	}
	return out, true
}
