package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Goal is one of issue 19's figures: a value computed from one target's
// Raw-family results, and the bound it must meet.
type Goal struct {
	Figure string
	Bound  float64
	AtMost bool   // met when the value is at most Bound, else at least
	Unit   string // of the value and the bound
	// value computes the figure from a target's results by benchmark
	// name; false when the run lacks what it needs.
	value func(byName map[string]Result) (float64, bool)
}

// Goals are issue 19's figures, measured through the raw-wire client so
// that they are the server's.
var Goals = []Goal{
	{Figure: "server CPU per durable insert, 64 connections", Bound: 15, AtMost: true, Unit: "µs", value: cpuPerUnit("Raw/Insert/64")},
	{Figure: "durable inserts/s, 64 connections ÷ 1 connection", Bound: 12, Unit: "×", value: throughputRatio("Raw/Insert/64", "Raw/Insert/1")},
	{Figure: "findOne by _id ÷ ping", Bound: 1.25, AtMost: true, Unit: "×", value: pingRatio("Raw/FindOne/IntId")},
	{Figure: "server CPU per findOne by _id", Bound: 8, AtMost: true, Unit: "µs", value: cpuPerUnit("Raw/FindOne/IntId")},
	{Figure: "insertMany of 1,000 documents of 100 B", Bound: 250000, Unit: "docs/s", value: opsPerSec("Raw/InsertMany/1000")},
}

func cpuPerUnit(bench string) func(map[string]Result) (float64, bool) {
	return func(by map[string]Result) (float64, bool) {
		r, ok := by[bench]
		return r.ServerCPUPerUnitUS, ok && r.CPUMeasured
	}
}

func throughputRatio(bench, over string) func(map[string]Result) (float64, bool) {
	return func(by map[string]Result) (float64, bool) {
		r, ok1 := by[bench]
		o, ok2 := by[over]
		if !ok1 || !ok2 || r.OpsPerSec <= 0 || o.OpsPerSec <= 0 {
			return 0, false
		}
		return r.OpsPerSec / o.OpsPerSec, true
	}
}

func pingRatio(bench string) func(map[string]Result) (float64, bool) {
	return func(by map[string]Result) (float64, bool) {
		r, ok := by[bench]
		return r.PingRatio, ok && r.PingRatio > 0
	}
}

func opsPerSec(bench string) func(map[string]Result) (float64, bool) {
	return func(by map[string]Result) (float64, bool) {
		r, ok := by[bench]
		return r.OpsPerSec, ok && r.OpsPerSec > 0
	}
}

// GoalResult is a goal on one target.
type GoalResult struct {
	Goal     Goal
	Target   string
	Value    float64
	Measured bool // the run has the results the figure needs
	Met      bool
}

// EvaluateGoals evaluates every goal on every target that ran Raw-family
// benchmarks, in the order the results name the targets.
func EvaluateGoals(results []Result) []GoalResult {
	var targets []string
	byTarget := map[string]map[string]Result{}
	for _, r := range results {
		if !strings.HasPrefix(r.Benchmark, rawFamily) {
			continue
		}
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
			byTarget[r.Target] = map[string]Result{}
		}
		if r.Status == StatusOK {
			byTarget[r.Target][r.Benchmark] = r
		}
	}
	var out []GoalResult
	for _, g := range Goals {
		for _, t := range targets {
			v, ok := g.value(byTarget[t])
			out = append(out, GoalResult{Goal: g, Target: t, Value: v, Measured: ok, Met: ok && g.met(v)})
		}
	}
	return out
}

func (g Goal) met(v float64) bool {
	if g.AtMost {
		return v <= g.Bound
	}
	return v >= g.Bound
}

// Want prints the bound: "≤ 15 µs".
func (g Goal) Want() string {
	op := "≥"
	if g.AtMost {
		op = "≤"
	}
	return op + " " + strconv.FormatFloat(g.Bound, 'f', -1, 64) + " " + g.Unit
}

// Verdict prints the measured value and whether it meets the goal.
func (r GoalResult) Verdict() string {
	switch {
	case !r.Measured:
		return "not measured"
	case r.Met:
		return num(r.Value) + " " + r.Goal.Unit + " ✅ met"
	default:
		return num(r.Value) + " " + r.Goal.Unit + " ❌ not met"
	}
}

// GoalsMarkdown renders the goals as a table, a column per target, or
// "" when no target ran the Raw family.
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
	b.WriteString("**Issue 19's figures** (the Raw family: raw-wire clients, so the figures are the server's):\n\n| figure | goal |")
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
