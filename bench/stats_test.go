package bench

import "testing"

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, c := range cases {
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var xs []float64
	for i := 100; i >= 1; i-- { // unsorted on purpose
		xs = append(xs, float64(i))
	}
	for p, want := range map[float64]float64{99: 99, 50: 50, 100: 100, 1: 1} {
		if got := Percentile(xs, p); got != want {
			t.Errorf("Percentile(1..100, %v) = %v, want %v", p, got, want)
		}
	}
	if got := Percentile([]float64{7, 3}, 99); got != 7 {
		t.Errorf("p99 of two samples = %v, want the larger, 7", got)
	}
	if xs[0] != 100 {
		t.Error("Percentile sorted its input in place")
	}
}

func TestMultiplierAndMarker(t *testing.T) {
	cases := []struct {
		target, base, want float64
		marker             string
	}{
		{50, 100, 0.5, "🟢 faster"},
		{150, 100, 1.5, "🟡 1-2x"},
		{300, 100, 3, "🟠 2-5x"},
		{800, 100, 8, "🔴 >5x"},
		{100, 0, 0, ""},
		{0, 100, 0, ""},
	}
	for _, c := range cases {
		got := Multiplier(c.target, c.base)
		if got != c.want || Marker(got) != c.marker {
			t.Errorf("Multiplier(%v, %v) = %v %q, want %v %q", c.target, c.base, got, Marker(got), c.want, c.marker)
		}
	}
}

func TestSummarize(t *testing.T) {
	rs := []Result{
		{Benchmark: FloorBenchmark, Target: MachineTarget, Status: StatusOK, SamplesUS: []float64{100}, Units: 1, BusyUS: 100},
		{Benchmark: "B", Target: "a", Status: StatusOK, SamplesUS: []float64{10, 30, 20}, Units: 3, BusyUS: 60},
		{Benchmark: "B", Target: "base", Status: StatusOK, SamplesUS: []float64{40}, Units: 1, BusyUS: 40},
		{Benchmark: "C", Target: "a", Status: StatusUnsupported},
	}
	Summarize(rs, "base")
	a := rs[1]
	if a.MedianUS != 20 || a.P99US != 30 || a.OpsPerSec != 50000 || a.Multiplier != 0.5 || a.FloorRatio != 0.2 {
		t.Errorf("summary of B on a = %+v", a)
	}
	if rs[2].Multiplier != 1 || rs[3].Multiplier != 0 {
		t.Errorf("baseline multiplier %v, unsupported multiplier %v; want 1 and 0", rs[2].Multiplier, rs[3].Multiplier)
	}
}
