package bench

import "testing"

// TestParseCPULine checks the /proc/stat reading that CPU per cycle rests
// on: busy counts user, nice, system, irq, softirq and steal, not idle or
// iowait, and the guest columns (already inside user and nice) are not
// added twice.
func TestParseCPULine(t *testing.T) {
	got, err := parseCPULine("cpu  100 2 30 400 50 6 7 8 90 10\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpuTimes{busy: 100 + 2 + 30 + 6 + 7 + 8, total: 100 + 2 + 30 + 400 + 50 + 6 + 7 + 8}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"cpu0 1 2 3 4 5", "cpu 1 2 x 4 5", "intr 1 2 3 4 5", "cpu 1 2"} {
		if _, err := parseCPULine(bad); err == nil {
			t.Errorf("%q: parsed, want an error", bad)
		}
	}
}

// TestMachineCPUPerCycle checks the arithmetic from two readings to µs
// per cycle and utilisation, and that a window without both readings
// reports nothing rather than a made-up figure.
func TestMachineCPUPerCycle(t *testing.T) {
	m := machineCPU{from: cpuTimes{busy: 1000, total: 4000}, to: cpuTimes{busy: 1150, total: 4200}, started: true, ok: true}
	got, ok := m.result(3000)
	if !ok {
		t.Fatal("no result")
	}
	// 150 jiffies = 1.5 s of CPU over 3000 cycles = 500 µs each; 150 of 200 jiffies busy.
	if got.BusyS != 1.5 || got.PerCycleUs != 500 || got.Utilisation != 0.75 {
		t.Fatalf("got %+v", got)
	}
	var never machineCPU
	never.stop()
	if _, ok := never.result(10); ok {
		t.Fatal("a window that never started reported a result")
	}
}
