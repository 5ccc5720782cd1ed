package bench

import (
	"os"
	"strconv"
	"strings"
)

// hostLoad1 reads the 1-minute load average from /proc/loadavg (Linux);
// 0 where that is not available.
func hostLoad1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0
	}
	return v
}
