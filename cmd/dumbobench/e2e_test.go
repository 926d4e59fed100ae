package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dumbodb/bench"
	"dumbodb/internal/dumboproc"
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
	cfg := &bench.Config{Targets: []bench.Target{{Name: "dumbo", URL: p.URL(), Pid: p.Pid()}}, Baseline: "dumbo",
		Families: []string{"Raw"}, Samples: 2, Duration: 50 * time.Millisecond, Warmup: 10 * time.Millisecond}
	results, err := bench.Run(context.Background(), cfg, bench.All(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 5 {
		t.Fatalf("%d Raw results, want 5: %+v", len(results), results)
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
		if !g.Measured {
			t.Errorf("%s not measured", g.Goal.Figure)
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
