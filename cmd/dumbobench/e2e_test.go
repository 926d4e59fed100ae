package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/bench"
	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	mongooptions "go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestMain(m *testing.M) { dumboproc.Main(m) }

// TestRunAgainstDumboDB builds and starts a real dumbodb, runs a tiny
// filter of benchmarks through the command line and checks the reports.
// It asserts what was measured, never how fast.
func TestRunAgainstDumboDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts dumbodb")
	}
	url, data := startDumbo(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--target", "dumbo=" + url, "--data-dir", "dumbo=" + data, "--quick",
		"--filter", `^(Floor/.*|FindOne/IntId|InsertOne/100B|Filter/Eq/1K/Indexed|VC/Commit/10K|LargeDoc/(Copy|Extract)/256KB|LargeDoc/StorageGrowth/1MB)$`,
		"--samples", "2", "--duration", "20ms", "--warmup", "10ms", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("dumbobench exited %d\nstdout: %s\nstderr: %s", code, &stdout, &stderr)
	}
	md := readFile(t, filepath.Join(out, "report.md"))
	for _, row := range []string{"| Floor/Ping | dumbo | ", "| Floor/Fdatasync256B | machine | ",
		"| FindOne/IntId | dumbo | ", "| InsertOne/100B | dumbo | ", "| VC/Commit/10K | dumbo | ",
		"| LargeDoc/Copy/256KB | dumbo | ", "| LargeDoc/Extract/256KB | dumbo | ", "| LargeDoc/StorageGrowth/1MB | dumbo | "} {
		if !strings.Contains(md, row) {
			t.Errorf("report.md lacks a row starting %q:\n%s", row, md)
		}
	}
	if strings.Contains(md, "| error") {
		t.Errorf("report.md has a failed benchmark:\n%s", md)
	}
	if !strings.Contains(md, "**Summary:** ") || !strings.Contains(md, "benchmarks run") {
		t.Errorf("report.md lacks the summary line:\n%s", md)
	}
	js := readFile(t, filepath.Join(out, "results.json"))
	if !strings.Contains(js, `"benchmark": "InsertOne/100B"`) || !strings.Contains(js, `"samples_us": [`) {
		t.Errorf("results.json lacks InsertOne/100B samples:\n%s", js)
	}
	if svg := readFile(t, filepath.Join(out, "multipliers.svg")); !strings.HasPrefix(svg, "<svg") {
		t.Errorf("multipliers.svg is not an SVG: %.80s", svg)
	}
}

// TestRawFamilyAgainstDumboDB runs the Raw family's pre-framed requests
// against a real dumbodb whose pid is known, as --start knows it: every
// row must succeed and carry × ping and the server's CPU.
func TestRawFamilyAgainstDumboDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts dumbodb")
	}
	p := dumboproc.StartT(t, t.TempDir())
	// The server runs with the default --cacheSizeMB, 256.
	cfg := &bench.Config{Targets: []bench.Target{{Name: "dumbo", URL: p.URL(), Pid: p.Pid(), CacheSizeMB: 256}}, Baseline: "dumbo",
		Families: []string{"Raw"}, Samples: 2, Duration: 50 * time.Millisecond, Warmup: 10 * time.Millisecond}
	results, err := bench.Run(context.Background(), cfg, bench.All(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 7 {
		t.Fatalf("%d Raw results, want 7: %+v", len(results), results)
	}
	for _, r := range results {
		if r.Status != bench.StatusOK || r.PingRatio <= 0 || !r.CPUMeasured {
			t.Errorf("%s: status %s %s, × ping %v, CPU measured %v; want ok with both", r.Benchmark, r.Status, r.Reason, r.PingRatio, r.CPUMeasured)
		}
		// 64 clients inserting durably for 2 × 50 ms keep the server
		// busy for more than one 10 ms tick.
		if r.Benchmark == "Raw/Insert/64" && r.ServerCPUPerUnitUS <= 0 {
			t.Errorf("Raw/Insert/64: server CPU %v µs/op, want some", r.ServerCPUPerUnitUS)
		}
	}
	for _, g := range bench.EvaluateGoals(results) {
		// No soak runs here; every other goal has what it needs.
		soak := g.Goal.Figure == "soak RSS slope after warm-up ("+bench.SoakBenchmark+")"
		if g.Measured == soak {
			t.Errorf("%s: measured %v", g.Goal.Figure, g.Measured)
		}
	}
}

func TestFlags(t *testing.T) {
	var stderr bytes.Buffer
	if code := run([]string{"run"}, &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "--target") {
		t.Errorf("run without targets: exit %d, stderr %q; want 2 and a hint", code, &stderr)
	}
	o, err := parseFlags([]string{"--quick", "--samples", "7", "--target", "a=mongodb://127.0.0.1:1"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.samples != 7 || o.duration != 200*time.Millisecond || o.imports != 10000 {
		t.Errorf("--quick with --samples 7: samples %d duration %s imports %d", o.samples, o.duration, o.imports)
	}
	if _, err := parseFlags([]string{"--target", "nourl"}, &stderr); err == nil {
		t.Error("--target without NAME=URL accepted")
	}
	o, err = parseFlags([]string{"--start", "--only", "LargeDoc, VC", "--data-dir", "x=/d"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.families) != "[LargeDoc VC]" || o.dataDirs["x"] != "/d" {
		t.Errorf("--only LargeDoc,VC --data-dir x=/d: families %q, data dirs %v", o.families, o.dataDirs)
	}
	if _, err := parseFlags([]string{"--start", "--data-dir", "x"}, &stderr); err == nil {
		t.Error("--data-dir without NAME=DIR accepted")
	}
	for _, c := range []struct {
		args []string
		soak time.Duration
	}{
		{[]string{"--start"}, 0},
		{[]string{"--start", "--only", "Soak"}, defaultSoak},
		{[]string{"--start", "--only", "Memory", "--soak", "30m"}, 30 * time.Minute},
	} {
		o, err := parseFlags(c.args, &stderr)
		if err != nil || o.soak != c.soak || o.cacheMB != 256 {
			t.Errorf("%q: soak %v, --cacheSizeMB %d, %v; want soak %v and 256", c.args, o.soak, o.cacheMB, err, c.soak)
		}
	}
	if _, err := parseFlags([]string{"--start", "--cacheSizeMB", "0"}, &stderr); err == nil {
		t.Error("--cacheSizeMB 0 accepted")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--start"}, "[1000000]"},
		{[]string{"--start", "--quick"}, "[100000]"},
		{[]string{"--start", "--quick", "--scale", "2K,10M"}, "[2000 10000000]"},
	} {
		o, err := parseFlags(c.args, &stderr)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if got := fmt.Sprint([]int(o.scales)); got != c.want {
			t.Errorf("%q: scales %s, want %s", c.args, got, c.want)
		}
	}
	if _, err := parseFlags([]string{"--start", "--scale", "1.5M"}, &stderr); err == nil {
		t.Error("--scale 1.5M accepted")
	}
}

// TestMemoryFiguresAgainstDumboDB runs a driver benchmark and a short
// soak against a real dumbodb whose pid and --cacheSizeMB are known, as
// --start knows them: both rows carry the server's RSS, the soak its
// samples, and the memory goal is measured against the budget.
func TestMemoryFiguresAgainstDumboDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts dumbodb")
	}
	p := dumboproc.StartT(t, t.TempDir(), "--cacheSizeMB", "64")
	cfg := &bench.Config{Targets: []bench.Target{{Name: "dumbo", URL: p.URL(), Pid: p.Pid(), CacheSizeMB: 64}}, Baseline: "dumbo",
		Filter: regexp.MustCompile(`^(FindOne/IntId|Soak/Mixed)$`), Samples: 1, Duration: 50 * time.Millisecond,
		Warmup: 10 * time.Millisecond, Soak: 5 * time.Second}
	results, err := bench.Run(context.Background(), cfg, bench.All(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("%d results, want FindOne/IntId and Soak/Mixed: %+v", len(results), results)
	}
	for _, r := range results {
		// A Go server holds more than 5 MB resident just running.
		if r.Status != bench.StatusOK || !r.RSSMeasured || r.ServerRSSPeakMB < 5 || r.ServerRSSEndMB > r.ServerRSSPeakMB || r.ServerCacheMB != 64 {
			t.Errorf("%s: status %s %s, RSS measured %v, peak %.1f MB, end %.1f MB, cache %d MB",
				r.Benchmark, r.Status, r.Reason, r.RSSMeasured, r.ServerRSSPeakMB, r.ServerRSSEndMB, r.ServerCacheMB)
		}
	}
	if soak := results[1]; len(soak.RSSSamples) < 3 || soak.Units < 10 {
		t.Errorf("Soak/Mixed over 5 s: %d RSS samples, %d operations; want a sample every 2 s and some work", len(soak.RSSSamples), soak.Units)
	}
	// The soak also read the server's memory by part, at its start and end
	// at least, and the kernel's anonymous RSS with each RSS sample.
	soak := results[1]
	if len(soak.MemorySamples) < 2 || soak.RSSSamples[0].AnonMB <= 0 {
		t.Fatalf("Soak/Mixed: %d memory samples, first anonymous RSS %.1f MB; want two or more, and RssAnon read",
			len(soak.MemorySamples), soak.RSSSamples[0].AnonMB)
	}
	for _, m := range soak.MemorySamples {
		if len(m.Parts) != 10 || m.Parts["Go live heap"] <= 0 || m.Parts["Go heap objects"] <= 0 || m.Parts["Go runtime metadata"] <= 0 {
			t.Errorf("Soak/Mixed memory sample at %.0f s: %v; want every part, the heap and metadata above 0", m.At, m.Parts)
		}
	}
	for _, g := range bench.EvaluateGoals(results) {
		if g.Goal.Figure == "server RSS peak, every benchmark run" && (!g.Measured || g.Bound != 64+bench.ServerRSSOverheadMB) {
			t.Errorf("RSS goal: measured %v, bound %v; want 64 + %d", g.Measured, g.Bound, bench.ServerRSSOverheadMB)
		}
	}
}

// startDumbo starts dumbodb on a fresh data directory, which it returns
// with the URL; it is killed when the test ends.
func startDumbo(t *testing.T) (url, dataDir string) {
	t.Helper()
	dataDir = t.TempDir()
	return dumboproc.StartT(t, dataDir).URL(), dataDir
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestScaleFamilyAgainstDumboDB runs the Scale family at 2,000 documents
// against a real dumbodb whose pid and data directory are known, with
// restarts on copies of its data directory as --start provides them:
// every step must succeed on the one collection they share, and carry
// its figure per document and the server's memory (and CPU, except the
// restarts, whose server is another process).
func TestScaleFamilyAgainstDumboDB(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts dumbodb")
	}
	data := t.TempDir()
	p := dumboproc.StartT(t, data)
	s := &servers{bin: dumboproc.Binary(t), cacheMB: 256, logf: t.Logf}
	t.Cleanup(s.stop)
	cfg := &bench.Config{Targets: []bench.Target{{Name: "dumbo", URL: p.URL(), DataDir: data, Pid: p.Pid(), CacheSizeMB: 256}}, Baseline: "dumbo",
		Families: []string{"Scale"}, Scales: []int{2000}, StartDumbo: s.startOn, Samples: 2, Duration: 50 * time.Millisecond, Warmup: 10 * time.Millisecond}
	results, err := bench.Run(context.Background(), cfg, bench.All(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 24 {
		t.Fatalf("%d Scale results, want 24: %+v", len(results), results)
	}
	for _, r := range results {
		restart := strings.Contains(r.Benchmark, "/Restart/")
		perDoc := r.Docs == 2000 || r.Benchmark == "Scale/2K/Disk/RatioToBSON"
		if r.Status != bench.StatusOK || !r.RSSMeasured || !perDoc || (r.Docs > 0 && r.PerDoc <= 0) || r.CPUMeasured == (restart || r.Quantity) {
			t.Errorf("%s: status %s %s, RSS measured %v, docs %d, per document %v, CPU measured %v",
				r.Benchmark, r.Status, r.Reason, r.RSSMeasured, r.Docs, r.PerDoc, r.CPUMeasured)
		}
	}
	md := bench.Markdown(bench.Meta{Baseline: "dumbo"}, results)
	if !strings.Contains(md, "| CreateIndex/Multikey | dumbo | ") || !strings.Contains(md, "| Disk/Bytes | dumbo | ") {
		t.Errorf("report.md lacks the rows per document:\n%s", md)
	}
	// The last step dropped the collection the steps shared.
	c, err := mongo.Connect(mongooptions.Client().ApplyURI(p.URL()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	names, err := c.ListDatabaseNames(context.Background(), bson.D{})
	if err != nil || slices.Contains(names, "dumbobench_scale_2K") {
		t.Errorf("databases after the family: %v, %v", names, err)
	}
}
