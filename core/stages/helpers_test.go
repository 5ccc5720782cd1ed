package stages

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// dtoMetric is a histogram's count and sum, read back for a test.
type dtoMetric struct {
	count uint64
	sum   float64
}

func (m *dtoMetric) read(t *testing.T, o prometheus.Observer) {
	t.Helper()
	var out dto.Metric
	if err := o.(prometheus.Metric).Write(&out); err != nil {
		t.Fatal(err)
	}
	m.count, m.sum = out.GetHistogram().GetSampleCount(), out.GetHistogram().GetSampleSum()
}
