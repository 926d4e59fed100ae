package bench

import (
	"math"
	"slices"
	"strings"
)

// Percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method: the smallest sample that at least p percent of the
// samples do not exceed (0 without samples). Nearest rank never invents a value that was not
// measured, which keeps p99 honest when there are few samples.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

// Median is the middle sample, or the mean of the two middle samples.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Multiplier is how many times slower a target is than the baseline,
// comparing medians: below 1 the target is faster. It is 0 (no figure)
// when either side has no measurement.
func Multiplier(targetMedian, baselineMedian float64) float64 {
	if targetMedian <= 0 || baselineMedian <= 0 {
		return 0
	}
	return targetMedian / baselineMedian
}

// Marker classifies a multiplier into the report's four bands.
func Marker(m float64) string {
	switch {
	case m <= 0:
		return ""
	case m < 1:
		return "🟢 faster"
	case m <= 2:
		return "🟡 1-2x"
	case m <= 5:
		return "🟠 2-5x"
	default:
		return "🔴 >5x"
	}
}

type summary struct{ median, p99 float64 }

func stats(samples []float64) summary {
	return summary{median: Median(samples), p99: Percentile(samples, 99)}
}

// FloorBenchmark is the machine floor every figure is also compared to;
// PingBenchmark is each target's round trip through the driver, which
// driver rows are compared to (the Raw family to RawPingBenchmark).
const (
	FloorBenchmark = "Floor/Fdatasync256B"
	PingBenchmark  = "Floor/Ping"
)

// pingFor names the ping a benchmark's × ping divides by: one through
// the same client.
func pingFor(bench string) string {
	if strings.HasPrefix(bench, rawFamily) {
		return RawPingBenchmark
	}
	return PingBenchmark
}

// Summarize fills in each result's statistics, its multiplier against the
// baseline target's result for the same benchmark, its ratios to the
// fdatasync floor and to its target's ping, and its server CPU per unit.
func Summarize(results []Result, baseline string) {
	base := map[string]float64{}
	ping := map[[2]string]float64{} // target, ping benchmark -> median
	var floor float64
	for i := range results {
		r := &results[i]
		if r.Status != StatusOK {
			continue
		}
		st := stats(r.SamplesUS)
		r.MedianUS, r.P99US = st.median, st.p99
		if r.BusyUS > 0 {
			r.OpsPerSec = float64(r.Units) / r.BusyUS * 1e6
		}
		if r.CPUMeasured && r.Units > 0 {
			r.ServerCPUPerUnitUS = r.ServerCPUUS / float64(r.Units)
		}
		if r.Docs > 0 {
			r.PerDoc = perDoc(*r)
		}
		if r.Target == baseline {
			base[r.Benchmark] = r.MedianUS
		}
		switch r.Benchmark {
		case FloorBenchmark:
			floor = r.MedianUS
		case PingBenchmark, RawPingBenchmark:
			ping[[2]string{r.Target, r.Benchmark}] = r.MedianUS
		}
	}
	for i := range results {
		r := &results[i]
		if r.Status != StatusOK {
			continue
		}
		r.Multiplier = Multiplier(r.MedianUS, base[r.Benchmark])
		if !r.Quantity {
			r.FloorRatio = Multiplier(r.MedianUS, floor)
			r.PingRatio = Multiplier(r.MedianUS, ping[[2]string{r.Target, pingFor(r.Benchmark)}])
		}
	}
}

// perDoc divides a result's figure by the documents of its collection:
// the median time of one call (the median per unit times the units a call
// does) or the amount measured.
func perDoc(r Result) float64 {
	perCall := 1.0
	if !r.Quantity && len(r.SamplesUS) > 0 {
		perCall = float64(r.Units) / float64(len(r.SamplesUS))
	}
	return r.MedianUS * perCall / float64(r.Docs)
}
