package bench

import (
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/report.golden.md")

func fixedRun() (Meta, []Result) {
	meta := Meta{Date: "2026-01-02T03:04:05Z", Command: "dumbobench run --quick", Baseline: "peer",
		Targets: []Target{{Name: "dumbo", URL: "mongodb://127.0.0.1:1"}, {Name: "peer", URL: "mongodb://127.0.0.1:2"}},
		Samples: 3, Duration: "200ms", Warmup: "100ms", Machine: "test"}
	rs := []Result{
		{Benchmark: "Floor/Ping", Group: GroupFloor, Target: "dumbo", Unit: "op", Status: StatusOK, SamplesUS: []float64{50, 60, 70}, Units: 3, BusyUS: 180},
		{Benchmark: "Floor/Ping", Group: GroupFloor, Target: "peer", Unit: "op", Status: StatusOK, SamplesUS: []float64{100}, Units: 1, BusyUS: 100},
		{Benchmark: FloorBenchmark, Group: GroupFloor, Target: MachineTarget, Unit: "op", Status: StatusOK, SamplesUS: []float64{200}, Units: 1, BusyUS: 200},
		{Benchmark: "InsertMany/100", Group: GroupBulk, Target: "dumbo", Unit: "doc", Status: StatusOK, SamplesUS: []float64{30}, Units: 100, BusyUS: 3000,
			RSSMeasured: true, ServerRSSPeakMB: 310.25, ServerRSSEndMB: 290, ServerCacheMB: 256, ServerAnonPeakMB: 250},
		{Benchmark: "InsertMany/100", Group: GroupBulk, Target: "peer", Unit: "doc", Status: StatusOK, SamplesUS: []float64{10}, Units: 100, BusyUS: 1000},
		{Benchmark: "FindOne/IntId", Group: GroupReads, Target: "dumbo", Unit: "op", Status: StatusOK, SamplesUS: []float64{1200}, Units: 1, BusyUS: 1200},
		{Benchmark: "FindOne/IntId", Group: GroupReads, Target: "peer", Unit: "op", Status: StatusOK, SamplesUS: []float64{800}, Units: 1, BusyUS: 800},
		{Benchmark: "Join/Lookup/Eq", Group: GroupJoins, Target: "dumbo", Unit: "op", Status: StatusUnsupported, Reason: "(Location40324) Unrecognized pipeline stage name: '$lookup'"},
		{Benchmark: "Join/Lookup/Eq", Group: GroupJoins, Target: "peer", Unit: "op", Status: StatusError, Reason: "a | b"},
		{Benchmark: "VC/Log/10K", Group: GroupVC, Target: "peer", Unit: "op", Status: StatusNA, Reason: "DumboDB only"},
		{Benchmark: RawPingBenchmark, Group: GroupRaw, Target: "dumbo", Unit: "op", Status: StatusOK, SamplesUS: []float64{20}, Units: 1, BusyUS: 20,
			CPUMeasured: true, ServerCPUUS: 10},
		{Benchmark: "Raw/InsertMany/1000", Group: GroupRaw, Target: "dumbo", Unit: "doc", Status: StatusOK, SamplesUS: []float64{3}, Units: 1000, BusyUS: 3000,
			CPUMeasured: true, ServerCPUUS: 2500},
		{Benchmark: RawPingBenchmark, Group: GroupRaw, Target: "peer", Unit: "op", Status: StatusOK, SamplesUS: []float64{40}, Units: 1, BusyUS: 40},
		{Benchmark: "Memory/CreateDrop500", Group: GroupMemory, Target: "dumbo", Unit: "MB kept", Status: StatusOK, Quantity: true,
			SamplesUS: []float64{11.4}, Units: 1, RSSMeasured: true, ServerRSSPeakMB: 70, ServerRSSEndMB: 69.9, ServerCacheMB: 256},
		{Benchmark: SoakBenchmark, Group: GroupMemory, Target: "dumbo", Unit: "op", Status: StatusOK, SamplesUS: []float64{500}, Units: 4, BusyUS: 2000,
			RSSMeasured: true, ServerRSSPeakMB: 101, ServerRSSEndMB: 99, ServerCacheMB: 256,
			RSSSamples: []RSSSample{{At: 0, MB: 80, AnonMB: 30, Threads: 9}, {At: 60, MB: 100, AnonMB: 40}, {At: 90, MB: 101, AnonMB: 41}, {At: 120, MB: 99, AnonMB: 40, Threads: 11}}, SlopeMeasured: true, RSSSlopeMBPerHour: -72,
			MemorySamples: soakMemoryFixture()},
	}
	Summarize(rs, meta.Baseline)
	return meta, rs
}

// soakMemoryFixture is four readings of every memory part, each 1 MB above
// the one before, so that the slopes after the fixture's 60 s warm-up are
// 120 MB/h.
func soakMemoryFixture() []MemorySample {
	var out []MemorySample
	for i, at := range []float64{0, 60, 90, 120} {
		parts := map[string]float64{}
		for k, p := range memoryParts {
			parts[p.name] = float64(10*k + i)
		}
		out = append(out, MemorySample{At: at, Parts: parts})
	}
	return out
}

func TestMarkdownGolden(t *testing.T) {
	meta, rs := fixedRun()
	got := Markdown(meta, rs)
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("Markdown differs from %s (rerun with -update after checking):\n%s", golden, got)
	}
}

func TestSummaryLine(t *testing.T) {
	_, rs := fixedRun()
	got := SummaryLine("peer", rs)
	want := "**Summary:** 8 benchmarks run; 2 of 4 compared results faster than the baseline `peer`; slowest multiplier 3.00x (InsertMany/100 on dumbo)."
	if got != want {
		t.Errorf("SummaryLine =\n%s\nwant\n%s", got, want)
	}
}

func TestSVGIsWellFormedWithOneBarPerComparison(t *testing.T) {
	meta, rs := fixedRun()
	svg := SVG(meta, rs)
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
			}
			break
		}
	}
	if n := strings.Count(svg, "<rect"); n != 4 {
		t.Errorf("SVG has %d bars, want 4 (one per non-baseline result with a multiplier)", n)
	}
}

func TestWriteReportFiles(t *testing.T) {
	meta, rs := fixedRun()
	dir := t.TempDir()
	if err := WriteReport(dir, meta, rs); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.md", "results.json", "multipliers.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s missing or empty: %v", name, err)
		}
	}
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if !strings.Contains(string(js), `"samples_us": [`) {
		t.Error("results.json lacks the samples")
	}
}
