package bench

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotFormats: SVG for documents, PNG for quick viewing.
var plotFormats = []string{"svg", "png"}

// WritePlots draws, into dir: an acquire-latency CDF per workload and client
// count (one line per target/policy), throughput vs clients per workload
// when several client counts ran, and Jain's index vs throughput.
func WritePlots(dir string, results []*Result) error {
	var errs []error
	for _, group := range groupBy(results, func(r *Result) string { return fmt.Sprintf("%s-c%d-r%.0f", r.Workload, r.Clients, r.RatePerSec) }) {
		errs = append(errs, plotCDF(dir, group))
	}
	closed := slices.DeleteFunc(slices.Clone(results), func(r *Result) bool { return r.RatePerSec > 0 })
	for _, group := range groupBy(closed, func(r *Result) string { return r.Workload }) {
		errs = append(errs, plotThroughput(dir, group))
	}
	if len(results) > 0 {
		errs = append(errs, plotFairness(dir, results))
	}
	return errors.Join(errs...)
}

// seriesName names a line: the target, plus the policy where it has one.
func seriesName(r *Result) string {
	if r.Policy == "native" {
		return r.Target
	}
	return r.Target + "/" + r.Policy
}

// groupBy splits results by key, keeping first-seen order.
func groupBy(results []*Result, key func(*Result) string) [][]*Result {
	var order []string
	groups := map[string][]*Result{}
	for _, r := range results {
		k := key(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([][]*Result, 0, len(order))
	for _, k := range order {
		out = append(out, groups[k])
	}
	return out
}

func plotCDF(dir string, group []*Result) error {
	first := group[0]
	p := plot.New()
	p.Title.Text = fmt.Sprintf("acquire latency CDF — %s, %d clients", first.Workload, first.Clients)
	if first.RatePerSec > 0 {
		p.Title.Text += fmt.Sprintf(" @ %.0f/s", first.RatePerSec)
	}
	p.X.Label.Text = "acquire latency (ms, log)"
	p.Y.Label.Text = "fraction ≤ x"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	p.Legend.Top = false
	p.Legend.Left = false
	drawn := 0
	for i, r := range group {
		if len(r.AcquireCDF) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(r.AcquireCDF))
		for j, c := range r.AcquireCDF {
			// A log axis cannot show 0; 1 µs is below any real grant.
			pts[j] = plotter.XY{X: max(c.Ms, 1e-3), Y: c.Fraction}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("cdf line %s: %w", seriesName(r), err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(seriesName(r), line)
		drawn++
	}
	if drawn == 0 {
		return nil
	}
	p.Add(plotter.NewGrid())
	name := fmt.Sprintf("cdf-acquire-%s-c%d", first.Workload, first.Clients)
	if first.RatePerSec > 0 {
		name += fmt.Sprintf("-r%.0f", first.RatePerSec)
	}
	return savePlot(p, dir, name)
}

func plotThroughput(dir string, group []*Result) error {
	clientCounts := map[int]bool{}
	for _, r := range group {
		clientCounts[r.Clients] = true
	}
	if len(clientCounts) < 2 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "throughput vs clients — " + group[0].Workload
	p.X.Label.Text = "clients (log)"
	p.Y.Label.Text = "ops/s (acquire+release cycles, log)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = logTicks{}
	// Peers differ by orders of magnitude, so y is logarithmic too, with
	// headroom on top where the legend goes.
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Legend.Top = true
	p.Legend.Left = false
	lo, hi := math.Inf(1), 0.0
	for _, r := range group {
		if r.OpsPerSec > 0 {
			lo, hi = min(lo, r.OpsPerSec), max(hi, r.OpsPerSec)
		}
	}
	if hi == 0 {
		return nil
	}
	p.Y.Min, p.Y.Max = lo/1.5, hi*6
	for i, series := range groupBy(group, seriesName) {
		slices.SortFunc(series, func(a, b *Result) int { return cmp.Compare(a.Clients, b.Clients) })
		pts := make(plotter.XYs, 0, len(series))
		for _, r := range series {
			if r.OpsPerSec > 0 { // a log axis cannot show a run with no ops
				pts = append(pts, plotter.XY{X: float64(r.Clients), Y: r.OpsPerSec})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("throughput line: %w", err)
		}
		line.Color = plotutil.Color(i)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(seriesName(series[0]), line, points)
	}
	p.Add(plotter.NewGrid())
	return savePlot(p, dir, "throughput-"+group[0].Workload)
}

func plotFairness(dir string, results []*Result) error {
	p := plot.New()
	p.Title.Text = "fairness vs throughput"
	p.X.Label.Text = "ops/s"
	p.Y.Label.Text = "Jain's index over clients' grants"
	p.Y.Min, p.Y.Max = 0, 1.05
	p.Legend.Top = false
	for i, series := range groupBy(results, func(r *Result) string { return seriesName(r) + " " + r.Workload }) {
		pts := make(plotter.XYs, len(series))
		for j, r := range series {
			pts[j] = plotter.XY{X: r.OpsPerSec, Y: r.Fairness.Jain}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("fairness scatter: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: plotutil.Color(i), Shape: plotutil.Shape(i), Radius: vg.Points(4)}
		p.Add(sc)
		p.Legend.Add(seriesName(series[0])+" "+series[0].Workload, sc)
	}
	p.Add(plotter.NewGrid())
	return savePlot(p, dir, "fairness")
}

// logTicks labels 1, 2 and 5 of every decade on a log axis, with unlabeled
// minor ticks between; plot.LogTicks labels only powers of ten, which leaves
// a narrow latency range with a single label.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for decade := math.Pow10(int(math.Floor(math.Log10(lo)))); decade <= hi; decade *= 10 {
		for i := 1; i < 10; i++ {
			v := decade * float64(i)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || i == 2 || i == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func savePlot(p *plot.Plot, dir, name string) error {
	name = strings.NewReplacer("/", "_", " ", "_").Replace(name)
	for _, ext := range plotFormats {
		path := filepath.Join(dir, name+"."+ext)
		if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
			return fmt.Errorf("save %s: %w", path, err)
		}
	}
	return nil
}
