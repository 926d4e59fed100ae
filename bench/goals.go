package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Goal is one figure of the server's cost, a value computed from one
// target's results, and the bound it must meet.
type Goal struct {
	Figure string
	Bound  float64
	AtMost bool   // met when the value is at most Bound, else at least
	Strict bool   // met only strictly below or above Bound
	Unit   string // of the value and the bound
	// value computes the figure from a target's results; false when the
	// run lacks what it needs.
	value func(t targetRun) (float64, bool)
	// bound, if set, replaces Bound by one that depends on the target
	// (its --cacheSizeMB); BoundText then describes it for the table.
	bound     func(t targetRun) (float64, bool)
	BoundText string
}

// targetRun is one target's results: the successful ones by benchmark
// name, and every row (a failed benchmark's memory still counts).
type targetRun struct {
	byName map[string]Result
	rows   []Result
}

// ServerRSSOverheadMB is the fixed memory a DumboDB server holds beside
// its --cacheSizeMB whatever the workload: 256 MB for the node cache
// (storage's, one cache for every database, full after enough reads), 16 MB
// for a checkpoint's memtable, 68 MB for an idle server (binary,
// runtime, first heap: measured by dumbobench's Floor rows, 58-68 MB)
// and 32 MB for the requests being handled (their messages, documents
// and replies) and the runtime's passing of its soft limit.
// What grows with the workload beyond the budget — the heap's garbage
// between collections, documents being handled — is what the goal must
// catch, so it is not in here (docs/design/resources.md, "Memory bounded
// by the budget").
const ServerRSSOverheadMB = 256 + 16 + 68 + 32

// SoakBenchmark is the benchmark whose RSS slope the soak goal reads.
const SoakBenchmark = "Soak/Mixed"

// Goals are the figures the report checks against bounds: the CPU and
// throughput ones measured through the raw-wire client so that they are the server's, the memory
// ones from the server's /proc/<pid>/status over every benchmark run.
var Goals = []Goal{
	{Figure: "server CPU per durable insert, 64 connections", Bound: 15, AtMost: true, Unit: "µs", value: cpuPerUnit("Raw/Insert/64")},
	{Figure: "durable inserts/s, 64 connections ÷ 1 connection", Bound: 12, Unit: "×", value: throughputRatio("Raw/Insert/64", "Raw/Insert/1")},
	{Figure: "findOne by _id ÷ ping", Bound: 1.25, AtMost: true, Unit: "×", value: pingRatio("Raw/FindOne/IntId")},
	{Figure: "server CPU per findOne by _id", Bound: 8, AtMost: true, Unit: "µs", value: cpuPerUnit("Raw/FindOne/IntId")},
	{Figure: "insertMany of 1,000 documents of 100 B", Bound: 250000, Unit: "docs/s", value: opsPerSec("Raw/InsertMany/1000")},
	{Figure: "one-field update of an 8 MB document ÷ of a 1 KB one", Bound: 5, AtMost: true, Unit: "×", value: throughputRatio(RawUpdateSmall, RawUpdateLarge)},
	{Figure: "server RSS peak, every benchmark run", AtMost: true, Unit: "MB", value: rssPeakOfRun,
		bound: rssBudget, BoundText: fmt.Sprintf("--cacheSizeMB + %d", ServerRSSOverheadMB)},
	{Figure: "soak RSS slope after warm-up (" + SoakBenchmark + ")", Bound: 1, AtMost: true, Strict: true, Unit: "MB/h", value: soakSlope},
}

func cpuPerUnit(bench string) func(targetRun) (float64, bool) {
	return func(t targetRun) (float64, bool) {
		r, ok := t.byName[bench]
		return r.ServerCPUPerUnitUS, ok && r.CPUMeasured
	}
}

func throughputRatio(bench, over string) func(targetRun) (float64, bool) {
	return func(t targetRun) (float64, bool) {
		r, ok1 := t.byName[bench]
		o, ok2 := t.byName[over]
		if !ok1 || !ok2 || r.OpsPerSec <= 0 || o.OpsPerSec <= 0 {
			return 0, false
		}
		return r.OpsPerSec / o.OpsPerSec, true
	}
}

func pingRatio(bench string) func(targetRun) (float64, bool) {
	return func(t targetRun) (float64, bool) {
		r, ok := t.byName[bench]
		return r.PingRatio, ok && r.PingRatio > 0
	}
}

func opsPerSec(bench string) func(targetRun) (float64, bool) {
	return func(t targetRun) (float64, bool) {
		r, ok := t.byName[bench]
		return r.OpsPerSec, ok && r.OpsPerSec > 0
	}
}

// rssPeakOfRun is the highest RSS peak of the target's rows.
func rssPeakOfRun(t targetRun) (float64, bool) {
	peak, ok := 0.0, false
	for _, r := range t.rows {
		if r.RSSMeasured {
			peak, ok = max(peak, r.ServerRSSPeakMB), true
		}
	}
	return peak, ok
}

// rssBudget is the target's --cacheSizeMB plus ServerRSSOverheadMB; none
// when its --cacheSizeMB is unknown (a server dumbobench did not start,
// FerretDB).
func rssBudget(t targetRun) (float64, bool) {
	cache := 0
	for _, r := range t.rows {
		cache = max(cache, r.ServerCacheMB)
	}
	return float64(cache + ServerRSSOverheadMB), cache > 0
}

func soakSlope(t targetRun) (float64, bool) {
	r, ok := t.byName[SoakBenchmark]
	return r.RSSSlopeMBPerHour, ok && r.SlopeMeasured
}

// GoalResult is a goal on one target.
type GoalResult struct {
	Goal     Goal
	Target   string
	Value    float64
	Bound    float64 // the goal's, or the target's own (Goal.bound)
	Measured bool    // the run has the results the figure needs
	Met      bool
}

// EvaluateGoals evaluates every goal on every target that ran Raw-family
// benchmarks or had its memory read, in the order the results name the
// targets.
func EvaluateGoals(results []Result) []GoalResult {
	var targets []string
	byTarget := map[string]*targetRun{}
	for _, r := range results {
		if !strings.HasPrefix(r.Benchmark, rawFamily) && !r.RSSMeasured {
			continue
		}
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
			byTarget[r.Target] = &targetRun{byName: map[string]Result{}}
		}
	}
	for _, r := range results {
		t := byTarget[r.Target]
		if t == nil {
			continue
		}
		t.rows = append(t.rows, r)
		if r.Status == StatusOK {
			t.byName[r.Benchmark] = r
		}
	}
	var out []GoalResult
	for _, g := range Goals {
		for _, t := range targets {
			out = append(out, g.evaluate(t, *byTarget[t]))
		}
	}
	return out
}

func (g Goal) evaluate(target string, t targetRun) GoalResult {
	v, ok := g.value(t)
	bound := g.Bound
	if g.bound != nil {
		var known bool
		bound, known = g.bound(t)
		ok = ok && known
	}
	return GoalResult{Goal: g, Target: target, Value: v, Bound: bound, Measured: ok, Met: ok && g.met(v, bound)}
}

func (g Goal) met(v, bound float64) bool {
	switch {
	case g.AtMost && g.Strict:
		return v < bound
	case g.AtMost:
		return v <= bound
	case g.Strict:
		return v > bound
	default:
		return v >= bound
	}
}

// Want prints the bound: "≤ 15 µs".
func (g Goal) Want() string {
	op := map[[2]bool]string{{true, false}: "≤", {true, true}: "<", {false, false}: "≥", {false, true}: ">"}[[2]bool{g.AtMost, g.Strict}]
	if g.bound != nil {
		return op + " " + g.BoundText + " " + g.Unit
	}
	return op + " " + strconv.FormatFloat(g.Bound, 'f', -1, 64) + " " + g.Unit
}

// Verdict prints the measured value and whether it meets the goal.
func (r GoalResult) Verdict() string {
	if !r.Measured {
		return "not measured"
	}
	v := num(r.Value) + " " + r.Goal.Unit
	if r.Goal.bound != nil {
		v += " of " + num(r.Bound) // the target's own bound
	}
	if r.Met {
		return v + " ✅ met"
	}
	return v + " ❌ not met"
}

// GoalsMarkdown renders the goals as a table, a column per target, or
// "" when no target ran the Raw family or had its memory read.
func GoalsMarkdown(goals []GoalResult) string {
	if len(goals) == 0 {
		return ""
	}
	var targets []string
	for _, g := range goals {
		if !slices.Contains(targets, g.Target) {
			targets = append(targets, g.Target)
		}
	}
	var b strings.Builder
	b.WriteString("**Goals** (CPU and throughput from the Raw family's raw-wire clients, so they are the server's; " +
		"memory from the server's /proc/<pid>/status, for servers dumbobench started):\n\n| figure | goal |")
	for _, t := range targets {
		fmt.Fprintf(&b, " %s |", t)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("--:|", len(targets)) + "\n")
	// EvaluateGoals gives each goal on every target in turn: a table row
	// is len(targets) consecutive results.
	for i := 0; i < len(goals); i += len(targets) {
		fmt.Fprintf(&b, "| %s | %s |", goals[i].Goal.Figure, goals[i].Goal.Want())
		for _, g := range goals[i : i+len(targets)] {
			fmt.Fprintf(&b, " %s |", g.Verdict())
		}
		b.WriteString("\n")
	}
	return b.String() + "\n"
}

// GoalLines prints one line per goal and target, for the terminal.
func GoalLines(goals []GoalResult) []string {
	var lines []string
	for _, g := range goals {
		lines = append(lines, fmt.Sprintf("%s: %s (goal %s): %s", g.Target, g.Goal.Figure, g.Goal.Want(), g.Verdict()))
	}
	return lines
}
