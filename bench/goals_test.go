package bench

import (
	"strconv"
	"strings"
	"testing"
)

// goalRun is a run on dumbo that misses most goals, and a peer without a
// pid (no CPU figures) that meets the throughput goals.
func goalRun() []Result {
	ok := func(target, bench, unit string, median float64, units int64, busy, cpu float64) Result {
		return Result{Benchmark: bench, Group: GroupRaw, Target: target, Unit: unit, Status: StatusOK,
			SamplesUS: []float64{median}, Units: units, BusyUS: busy, CPUMeasured: cpu > 0, ServerCPUUS: cpu}
	}
	rs := []Result{
		ok("dumbo", RawPingBenchmark, "op", 70, 1000, 70000, 1),
		ok("dumbo", "Raw/Insert/1", "op", 242, 4130, 1e6, 1),
		ok("dumbo", "Raw/Insert/64", "op", 2184, 29300, 1e6, 29300*37.7),
		ok("dumbo", "Raw/FindOne/IntId", "op", 103, 1000, 103000, 8000), // exactly 8 µs: met
		ok("dumbo", "Raw/InsertMany/1000", "doc", 13.4, 74000, 1e6, 1),
		ok("peer", RawPingBenchmark, "op", 100, 1000, 100000, 0),
		ok("peer", "Raw/Insert/1", "op", 1000, 1000, 1e6, 0),
		ok("peer", "Raw/Insert/64", "op", 1000, 12000, 1e6, 0), // exactly 12 x: met
		ok("peer", "Raw/FindOne/IntId", "op", 110, 1000, 110000, 0),
		{Benchmark: "Raw/InsertMany/1000", Group: GroupRaw, Target: "peer", Unit: "doc", Status: StatusError, Reason: "boom"},
		ok("peer", "FindOne/IntId", "op", 1, 1, 1, 0), // not a Raw row: no goal reads it
		ok("dumbo", RawUpdateSmall, "op", 540, 1000, 540000, 1),
		ok("dumbo", RawUpdateLarge, "op", 33000, 1000, 33e6, 1),
		ok("peer", RawUpdateSmall, "op", 1000, 1000, 1e6, 0),
		ok("peer", RawUpdateLarge, "op", 5000, 1000, 5e6, 0), // exactly 5 x: met
	}
	// Memory: dumbo's highest peak is on a failed row, 1 MB over its
	// budget of 256 + ServerRSSOverheadMB; the peer's --cacheSizeMB is
	// unknown, so its peak has no bound.
	memory := func(i int, target string, peak float64, cache int) {
		rs[i].RSSMeasured, rs[i].ServerRSSPeakMB, rs[i].ServerCacheMB = true, peak, cache
	}
	memory(1, "dumbo", 300, 256)
	memory(9, "peer", 900, 0)
	rs = append(rs,
		Result{Benchmark: "Memory/CreateDrop500", Group: GroupMemory, Target: "dumbo", Status: StatusError, Reason: "boom",
			RSSMeasured: true, ServerRSSPeakMB: 256 + ServerRSSOverheadMB + 1, ServerCacheMB: 256},
		Result{Benchmark: SoakBenchmark, Group: GroupMemory, Target: "dumbo", Unit: "op", Status: StatusOK, SamplesUS: []float64{1},
			RSSMeasured: true, ServerRSSPeakMB: 100, ServerCacheMB: 256, SlopeMeasured: true, RSSSlopeMBPerHour: 0.4})
	Summarize(rs, "peer")
	return rs
}

func TestEvaluateGoals(t *testing.T) {
	want := map[string][2]string{ // figure -> dumbo's verdict, peer's
		"server CPU per durable insert, 64 connections":        {"37.7 µs ❌ not met", "not measured"},
		"durable inserts/s, 64 connections ÷ 1 connection":     {"7.09 × ❌ not met", "12.0 × ✅ met"},
		"findOne by _id ÷ ping":                                {"1.47 × ❌ not met", "1.10 × ✅ met"},
		"server CPU per findOne by _id":                        {"8.00 µs ✅ met", "not measured"},
		"insertMany of 1,000 documents of 100 B":               {"74000 docs/s ❌ not met", "not measured"},
		"one-field update of an 8 MB document ÷ of a 1 KB one": {"61.1 × ❌ not met", "5.00 × ✅ met"},
		"server RSS peak, every benchmark run":                 {"629 MB of 628 ❌ not met", "not measured"}, // 256 + ServerRSSOverheadMB + 1
		"soak RSS slope after warm-up (Soak/Mixed)":            {"0.40 MB/h ✅ met", "not measured"},
	}
	got := EvaluateGoals(goalRun())
	if len(got) != 2*len(Goals) {
		t.Fatalf("%d goal results, want %d (every goal on both targets)", len(got), 2*len(Goals))
	}
	for i, g := range got {
		side := map[string]int{"dumbo": 0, "peer": 1}[g.Target]
		if wantTarget := []string{"dumbo", "peer"}[i%2]; g.Target != wantTarget {
			t.Errorf("result %d is on %s, want %s: targets in the results' order", i, g.Target, wantTarget)
		}
		if v := g.Verdict(); v != want[g.Goal.Figure][side] {
			t.Errorf("%s on %s: %q, want %q", g.Goal.Figure, g.Target, v, want[g.Goal.Figure][side])
		}
	}
}

func TestGoalsWithoutRawRowsOrMemory(t *testing.T) {
	_, rs := fixedRun()
	var driverOnly []Result
	for _, r := range rs {
		if r.Group != GroupRaw && !r.RSSMeasured {
			driverOnly = append(driverOnly, r)
		}
	}
	if g := EvaluateGoals(driverOnly); len(g) != 0 {
		t.Errorf("a run without the Raw family or memory readings has %d goal results, want none", len(g))
	}
	if md := GoalsMarkdown(nil); md != "" {
		t.Errorf("GoalsMarkdown(nil) = %q, want nothing", md)
	}
}

func TestGoalsMarkdownAndLines(t *testing.T) {
	goals := EvaluateGoals(goalRun())
	md := GoalsMarkdown(goals)
	for _, row := range []string{
		"| figure | goal | dumbo | peer |",
		"| server CPU per durable insert, 64 connections | ≤ 15 µs | 37.7 µs ❌ not met | not measured |",
		"| insertMany of 1,000 documents of 100 B | ≥ 250000 docs/s | 74000 docs/s ❌ not met | not measured |",
	} {
		if !strings.Contains(md, row+"\n") {
			t.Errorf("goals table lacks %q:\n%s", row, md)
		}
	}
	lines := GoalLines(goals)
	if want := "peer: findOne by _id ÷ ping (goal ≤ 1.25 ×): 1.10 × ✅ met"; lines[5] != want {
		t.Errorf("line 5 = %q, want %q", lines[5], want)
	}
}

func TestPingRatioUsesTheSameClientsPing(t *testing.T) {
	for _, r := range goalRun() {
		switch r.Benchmark {
		case "Raw/FindOne/IntId":
			if r.Target == "dumbo" && r.PingRatio != 103.0/70 {
				t.Errorf("Raw/FindOne/IntId on dumbo: × ping %v, want 103/70 (Raw/Ping's median)", r.PingRatio)
			}
		case "FindOne/IntId":
			if r.PingRatio != 0 {
				t.Errorf("FindOne/IntId on peer without a Floor/Ping: × ping %v, want none", r.PingRatio)
			}
		}
	}
}

func TestStrictAndPerTargetBounds(t *testing.T) {
	soak := Goals[len(Goals)-1]
	if soak.value == nil || soak.Want() != "< 1 MB/h" || soak.met(1, 1) || !soak.met(0.99, 1) || !soak.met(-3, 1) {
		t.Errorf("soak goal %q: a slope of exactly 1 MB/h must miss it, below must meet it", soak.Want())
	}
	rss := Goals[len(Goals)-2]
	run := targetRun{rows: []Result{{RSSMeasured: true, ServerRSSPeakMB: 300, ServerCacheMB: 64}}}
	g := rss.evaluate("dumbo", run)
	if !g.Measured || g.Bound != 64+ServerRSSOverheadMB || g.Met != (300 <= 64+ServerRSSOverheadMB) {
		t.Errorf("RSS goal with --cacheSizeMB 64: %+v; want the bound 64 + %d", g, ServerRSSOverheadMB)
	}
	if want := "≤ --cacheSizeMB + " + strconv.Itoa(ServerRSSOverheadMB) + " MB"; rss.Want() != want {
		t.Errorf("RSS goal prints %q, want %q", rss.Want(), want)
	}
}
