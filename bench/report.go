package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Meta describes a run for the report's header.
type Meta struct {
	Date     string   `json:"date"`
	Command  string   `json:"command"`
	Targets  []Target `json:"targets"`
	Baseline string   `json:"baseline"`
	Samples  int      `json:"samples"`
	Duration string   `json:"duration"`
	Warmup   string   `json:"warmup"`
	Soak     string   `json:"soak,omitempty"` // the Soak family's duration, "" when not run
	Machine  string   `json:"machine"`
}

// WriteReport writes report.md, results.json and multipliers.svg to dir.
func WriteReport(dir string, meta Meta, results []Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	js, err := json.MarshalIndent(struct {
		Meta    Meta     `json:"meta"`
		Results []Result `json:"results"`
	}{meta, results}, "", " ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	files := map[string][]byte{
		"report.md":       []byte(Markdown(meta, results)),
		"results.json":    js,
		"multipliers.svg": []byte(SVG(meta, results)),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// Markdown renders the report: a header, the summary line, the goals and
// one table per group, in the order of the Group constants.
func Markdown(meta Meta, results []Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# dumbobench report\n\n")
	fmt.Fprintf(&b, "- date: %s\n- command: `%s`\n- machine: %s\n", meta.Date, meta.Command, meta.Machine)
	for _, t := range meta.Targets {
		fmt.Fprintf(&b, "- target `%s`: %s", t.Name, t.URL)
		if t.Only != "" {
			fmt.Fprintf(&b, " (only benchmarks matching `%s`)", t.Only)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- baseline: `%s`; %d interleaved rounds of %s per target after %s of warm-up; writes use {w: 1, j: true}\n",
		meta.Baseline, meta.Samples, meta.Duration, meta.Warmup)
	if meta.Soak != "" {
		fmt.Fprintf(&b, "- soak: %s per target, one round without warm-up\n", meta.Soak)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%s\n\n", SummaryLine(meta.Baseline, results))
	b.WriteString(GoalsMarkdown(EvaluateGoals(results)))
	fmt.Fprintf(&b, "Multiplier: median ÷ the baseline's median (below 1 is faster): 🟢 faster, 🟡 1-2x, 🟠 2-5x, 🔴 >5x. "+
		"× fsync: median ÷ the median of one 256-byte append + fdatasync on this machine. "+
		"× ping: median ÷ the same target's ping median through the same client (%s for driver rows, %s for the %s family). "+
		"server CPU µs/op: the server's user + system CPU time over the timed calls (/proc/<pid>/stat, in 10 ms ticks) ÷ their operations "+
		"(or documents, /doc), for servers dumbobench started itself (--start). "+
		"server RSS peak MB: the highest resident memory of such a server from the benchmark's setup to its cleanup (VmHWM of /proc/<pid>/status, reset at the start).\n",
		PingBenchmark, RawPingBenchmark, strings.TrimSuffix(rawFamily, "/"))
	b.WriteString(memoryMarkdown(meta, results))
	for _, g := range GroupOrder {
		rows := inGroup(results, g)
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", g)
		b.WriteString("| benchmark | target | median µs | p99 µs | ops/s | × baseline | | × fsync | × ping | server CPU µs/op | server RSS peak MB |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|---|--:|--:|--:|--:|\n")
		for _, r := range rows {
			b.WriteString(row(r, meta.Baseline))
		}
		switch g {
		case GroupLargeDoc:
			b.WriteString(sideBySide(meta, rows))
		case GroupScale:
			b.WriteString(scaleMarkdown(rows))
		}
	}
	return b.String()
}

// sideBySide renders one row per benchmark with every target's median in
// a column, then the first target's median divided by each other's: the
// LargeDoc family compares DumboDB with both FerretDB and itself with the
// path index off, not only with the baseline.
func sideBySide(meta Meta, rows []Result) string {
	var targets, names []string
	cell := map[[2]string]Result{}
	for _, r := range rows {
		if !slices.Contains(names, r.Benchmark) {
			names = append(names, r.Benchmark)
		}
		cell[[2]string{r.Benchmark, r.Target}] = r
	}
	for _, t := range meta.Targets {
		for _, r := range rows {
			if r.Target == t.Name {
				targets = append(targets, t.Name)
				break
			}
		}
	}
	if len(targets) < 2 {
		return ""
	}
	first := targets[0]
	var b strings.Builder
	fmt.Fprintf(&b, "\nSide by side: median time of one operation over the whole collection (or the amount measured); "+
		"`%s ÷ X` divides %s's median by X's (below 1: %s is faster or smaller).\n\n| benchmark |", first, first, first)
	for _, t := range targets {
		fmt.Fprintf(&b, " %s |", t)
	}
	for _, t := range targets[1:] {
		fmt.Fprintf(&b, " %s ÷ %s |", first, t)
	}
	b.WriteString("\n|---|" + strings.Repeat("--:|", 2*len(targets)-1) + "\n")
	for _, name := range names {
		fmt.Fprintf(&b, "| %s |", name)
		for _, t := range targets {
			r, ok := cell[[2]string{name, t}]
			switch {
			case !ok:
				b.WriteString(" |")
			case r.Status != StatusOK:
				fmt.Fprintf(&b, " %s |", r.Status)
			case r.Quantity:
				fmt.Fprintf(&b, " %s %s |", num(r.MedianUS), r.Unit)
			default:
				fmt.Fprintf(&b, " %s |", duration(r.MedianUS))
			}
		}
		mine := cell[[2]string{name, first}]
		for _, t := range targets[1:] {
			other := cell[[2]string{name, t}]
			m := 0.0
			if mine.Status == StatusOK && other.Status == StatusOK {
				m = Multiplier(mine.MedianUS, other.MedianUS)
			}
			if m > 0 {
				fmt.Fprintf(&b, " %s %s |", multiplier(m), strings.Fields(Marker(m))[0])
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// duration prints µs as µs, ms or s with num's precision.
func duration(us float64) string {
	switch {
	case us >= 1e6:
		return num(us/1e6) + " s"
	case us >= 1e3:
		return num(us/1e3) + " ms"
	default:
		return num(us) + " µs"
	}
}

func inGroup(results []Result, group string) []Result {
	var rows []Result
	for _, r := range results {
		if r.Group == group {
			rows = append(rows, r)
		}
	}
	return rows
}

func row(r Result, baseline string) string {
	name := fmt.Sprintf("| %s | %s ", r.Benchmark, r.Target)
	if r.Status != StatusOK {
		what := r.Status
		if r.Reason != "" {
			what += ": " + strings.ReplaceAll(r.Reason, "|", "\\|")
		}
		return name + fmt.Sprintf("| %s | | | | | | | | %s |\n", what, rssPeak(r))
	}
	mult, marker := "", Marker(r.Multiplier)
	switch {
	case r.Target == baseline:
		mult, marker = "1.00", "baseline"
	case r.Multiplier > 0:
		mult = multiplier(r.Multiplier)
	}
	if r.Quantity {
		return name + fmt.Sprintf("| %s %s | | | %s | %s | | | | %s |\n", num(r.MedianUS), r.Unit, mult, marker, rssPeak(r))
	}
	unit := ""
	if r.Unit != "op" {
		unit = "/" + r.Unit
	}
	cpu := ""
	if r.CPUMeasured {
		cpu = num(r.ServerCPUPerUnitUS) + unit
	}
	return name + fmt.Sprintf("| %s%s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
		num(r.MedianUS), unit, num(r.P99US), num(r.OpsPerSec), mult, marker, ratio(r.FloorRatio), ratio(r.PingRatio), cpu, rssPeak(r))
}

func rssPeak(r Result) string {
	if !r.RSSMeasured {
		return ""
	}
	return num(r.ServerRSSPeakMB)
}

// memoryMarkdown renders each family's highest RSS peak per target whose
// memory was read, with the target's --cacheSizeMB, and the soak's slope:
// the budget must hold under every family, not only on average.
func memoryMarkdown(meta Meta, results []Result) string {
	var families, targets []string
	peak, anon := map[[2]string]float64{}, map[[2]string]float64{}
	cache := map[string]int{}
	for _, r := range results {
		if !r.RSSMeasured {
			continue
		}
		family, _, _ := strings.Cut(r.Benchmark, "/")
		if !slices.Contains(families, family) {
			families = append(families, family)
		}
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
		k := [2]string{family, r.Target}
		peak[k], anon[k] = max(peak[k], r.ServerRSSPeakMB), max(anon[k], r.ServerAnonPeakMB)
		cache[r.Target] = max(cache[r.Target], r.ServerCacheMB)
	}
	if len(families) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## Server memory by family\n\nThe highest RSS peak (MB) of each family's benchmarks, and in parentheses the highest anonymous memory (RssAnon, sampled every 100 ms: "+
		"the heap and stacks without the file pages, which the kernel can drop); the goal is --cacheSizeMB + %d MB (ServerRSSOverheadMB, docs/design/resources.md).\n\n| family |", ServerRSSOverheadMB)
	for _, t := range targets {
		if cache[t] > 0 {
			fmt.Fprintf(&b, " %s (--cacheSizeMB %d) |", t, cache[t])
		} else {
			fmt.Fprintf(&b, " %s |", t)
		}
	}
	b.WriteString("\n|---|" + strings.Repeat("--:|", len(targets)) + "\n")
	for _, f := range families {
		fmt.Fprintf(&b, "| %s |", f)
		for _, t := range targets {
			if v, ok := peak[[2]string{f, t}]; ok {
				fmt.Fprintf(&b, " %s (%s) |", num(v), num(anon[[2]string{f, t}]))
			} else {
				b.WriteString(" |")
			}
		}
		b.WriteString("\n")
	}
	b.WriteString(memoryLines(results))
	return b.String()
}

// memoryLines describes the rows whose figure is the memory itself: the
// Memory family's peak and after, the soak's samples, slope and peak.
func memoryLines(results []Result) string {
	var b strings.Builder
	for _, r := range results {
		switch {
		case !r.RSSMeasured || r.Status != StatusOK:
		case len(r.RSSSamples) > 0:
			b.WriteString(soakLine(r))
			b.WriteString(memoryPartsTable(r))
		case r.Group == GroupMemory:
			fmt.Fprintf(&b, "\n%s on %s: RSS peak %s MB, %s MB after (%s %s).\n",
				r.Benchmark, r.Target, num(r.ServerRSSPeakMB), num(r.ServerRSSEndMB), num(r.MedianUS), r.Unit)
		}
	}
	return b.String()
}

func soakLine(r Result) string {
	first, last := r.RSSSamples[0], r.RSSSamples[len(r.RSSSamples)-1]
	slope := "too few samples after the warm-up for a slope"
	if r.SlopeMeasured {
		slope = fmt.Sprintf("slope %s MB/hour after the first %s s", num(r.RSSSlopeMBPerHour), num(soakWarmup(r.RSSSamples)))
	}
	threads := ""
	if first.Threads > 0 {
		threads = fmt.Sprintf("; %d threads first, %d last", first.Threads, last.Threads)
	}
	return fmt.Sprintf("\n%s on %s: %s s, %d RSS samples (%s MB first, %s MB last), %s; peak %s MB%s.\n",
		r.Benchmark, r.Target, num(last.At), len(r.RSSSamples), num(first.MB), num(last.MB), slope, num(r.ServerRSSPeakMB), threads)
}

// num prints three significant figures, enough for timings that vary by
// more than that from run to run.
func num(x float64) string {
	// By magnitude: a falling soak's slope is negative.
	switch a := math.Abs(x); {
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// multiplier keeps two decimals, and two significant figures below 0.01
// where a fixed format would print 0.00.
func multiplier(m float64) string {
	if m < 0.01 {
		return fmt.Sprintf("%.2g", m)
	}
	return fmt.Sprintf("%.2f", m)
}

func ratio(x float64) string {
	if x <= 0 {
		return ""
	}
	return num(x)
}

// SummaryLine counts the benchmarks run and, among the other targets'
// results, those faster than the baseline and the slowest multiplier.
func SummaryLine(baseline string, results []Result) string {
	run := map[string]bool{}
	compared, faster := 0, 0
	var slowest Result
	for _, r := range results {
		if r.Status == StatusOK {
			run[r.Benchmark] = true
		}
		if r.Target == baseline || r.Multiplier <= 0 {
			continue
		}
		compared++
		if r.Multiplier < 1 {
			faster++
		}
		if r.Multiplier > slowest.Multiplier {
			slowest = r
		}
	}
	line := fmt.Sprintf("**Summary:** %d benchmarks run; %d of %d compared results faster than the baseline `%s`",
		len(run), faster, compared, baseline)
	if slowest.Multiplier > 0 {
		line += fmt.Sprintf("; slowest multiplier %sx (%s on %s)", multiplier(slowest.Multiplier), slowest.Benchmark, slowest.Target)
	}
	return line + "."
}

// SVG draws one horizontal bar per compared result on a log scale centred
// on 1x: bars to the left are faster than the baseline, to the right slower.
func SVG(meta Meta, results []Result) string {
	var bars []Result
	for _, r := range results {
		if r.Target != meta.Baseline && r.Multiplier > 0 {
			bars = append(bars, r)
		}
	}
	const (
		label, plot, rowH, top = 330.0, 500.0, 16.0, 40.0
	)
	span := 1.0 // decades each side of 1x
	for _, r := range bars {
		span = max(span, math.Ceil(math.Abs(math.Log10(r.Multiplier))))
	}
	x := func(m float64) float64 { return label + plot/2 + math.Log10(m)/span*plot/2 }
	height := top + rowH*float64(len(bars)) + 30
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", label+plot+60, height)
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14">Multiplier vs %s (log scale; left of 1x is faster)</text>`+"\n", esc(meta.Baseline))
	for p := -span; p <= span; p++ {
		gx := x(math.Pow(10, p))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ccc"/><text x="%.1f" y="%.0f" text-anchor="middle">%gx</text>`+"\n",
			gx, top-5, gx, height-25, gx, height-10, math.Pow(10, p))
	}
	for i, r := range bars {
		y := top + rowH*float64(i)
		x0, x1 := x(1), x(r.Multiplier)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s (%s)</text>`+"\n", label-6, y+11, esc(r.Benchmark), esc(r.Target))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%.2fx</title></rect>`+"\n",
			min(x0, x1), y+2, math.Max(math.Abs(x1-x0), 1), rowH-4, barColor(r.Multiplier), r.Multiplier)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func barColor(m float64) string {
	switch {
	case m < 1:
		return "#2e7d32"
	case m <= 2:
		return "#f9a825"
	case m <= 5:
		return "#ef6c00"
	default:
		return "#c62828"
	}
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
