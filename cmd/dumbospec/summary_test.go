package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCountFolder counts a folder whose files passed and failed case by
// case, was skipped whole, never finished, and was never started.
func TestCountFolder(t *testing.T) {
	testdata := t.TempDir()
	for name, tests := range map[string]string{
		"find.json":        `[{}, {}, {}]`,
		"skipped.json":     `[{}, {}]`,
		"hung.json":        `[{}, {}]`,
		"late.json":        `[{}, {}]`,
		"nested/deep.json": `[{}]`, // another folder's
	} {
		file := filepath.Join(testdata, "crud", "unified", name)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(`{"tests": `+tests+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	log := filepath.Join(t.TempDir(), "crud_unified.log")
	if err := os.WriteFile(log, []byte(`=== RUN   TestUnifiedSpec
=== RUN   TestUnifiedSpec/crud/unified/find.json
=== RUN   TestUnifiedSpec/crud/unified/find.json/finds_one
=== RUN   TestUnifiedSpec/crud/unified/find.json/finds_two
    unified_spec_runner.go:1: a failure
=== RUN   TestUnifiedSpec/crud/unified/find.json/finds_three
=== RUN   TestUnifiedSpec/crud/unified/skipped.json
=== RUN   TestUnifiedSpec/crud/unified/hung.json
=== RUN   TestUnifiedSpec/crud/unified/hung.json/waits
=== RUN   TestUnifiedSpec/crud/unified/nested/deep.json/x
--- FAIL: TestUnifiedSpec (1.00s)
    --- FAIL: TestUnifiedSpec/crud/unified (1.00s)
        --- FAIL: TestUnifiedSpec/crud/unified/find.json (0.20s)
            --- PASS: TestUnifiedSpec/crud/unified/find.json/finds_one (0.10s)
            --- FAIL: TestUnifiedSpec/crud/unified/find.json/finds_two (0.05s)
            --- SKIP: TestUnifiedSpec/crud/unified/find.json/finds_three (0.00s)
        --- SKIP: TestUnifiedSpec/crud/unified/skipped.json (0.00s)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	status, err := parseLog(log, "crud/unified")
	if err != nil {
		t.Fatal(err)
	}
	c, err := countFolder(testdata, "crud/unified", status, log)
	if err != nil {
		t.Fatal(err)
	}
	// find: 1 passed, 1 failed, 1 skipped; skipped: 2 skipped; hung: 1
	// case unfinished and 1 never started; late: 2 never started.
	want := counts{passed: 1, failed: 5, skipped: 3, skippedFiles: 1, notRun: 4, log: log}
	if len(c.passes) != 1 || len(c.failures) == 0 || !strings.HasPrefix(c.passes[0], "crud/unified/") {
		t.Errorf("named cases: passes %v, failures %v", c.passes, c.failures)
	}
	c.passes, c.failures = nil, nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("counts %+v, want %+v", c, want)
	}
	if line := c.line("crud/unified"); !strings.Contains(line, "1 passed,    5 failed,    3 skipped (1 whole files skipped) (4 not run") {
		t.Errorf("line %q", line)
	}
}

func TestRunPatternAnchorsEveryElement(t *testing.T) {
	if got, want := runPattern("command-monitoring"), `^TestUnifiedSpec$/^command-monitoring$/\.json$`; got != want {
		t.Errorf("runPattern = %q, want %q", got, want)
	}
}
