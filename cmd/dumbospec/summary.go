package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// counts are spec cases by outcome. A case counts once, by its own result
// when it has one, as failed when it has none.
type counts struct {
	passed, failed, skipped int
	// skippedFiles are the files skipped as a whole (runOnRequirements).
	skippedFiles int
	// notRun are the failed cases without a result: their file failed
	// before them (a setup error), the runner timed out or crashed, or the
	// run's time was up before their folder.
	notRun int
	log    string // the runner's output; "" when the folder was not reached
	// failures and passes name the cases ("file.json/case") by outcome,
	// for checking a run against the known failures.
	failures, passes []string
}

func (c *counts) add(o counts) {
	c.passed += o.passed
	c.failed += o.failed
	c.skipped += o.skipped
	c.failures = append(c.failures, o.failures...)
	c.passes = append(c.passes, o.passes...)
}

// line is the folder's line of the report.
func (c counts) line(folder string) string {
	s := fmt.Sprintf("%-45s %4d passed, %4d failed, %4d skipped", folder+":", c.passed, c.failed, c.skipped)
	if c.skippedFiles > 0 {
		s += fmt.Sprintf(" (%d whole files skipped)", c.skippedFiles)
	}
	switch {
	case c.log == "":
		s += " (not reached within -timeout)"
	case c.notRun > 0:
		s += fmt.Sprintf(" (%d not run to completion: setup error, timeout or crash; see %s)", c.notRun, c.log)
	}
	return s
}

// Lines of `go test -v` output: a test's start and its result, the latter
// indented by its depth.
var (
	startLine  = regexp.MustCompile(`^=== RUN\s+(\S+)`)
	resultLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(`)
)

// parseLog returns the outcome of each test the runner started under
// folder, by its name below the folder (file.json or file.json/case):
// PASS, FAIL, SKIP, or RUN for one that never finished.
func parseLog(path, folder string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	prefix := "TestUnifiedSpec/" + folder + "/"
	status := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20) // the runner logs whole documents
	for sc.Scan() {
		if m := resultLine.FindStringSubmatch(sc.Text()); m != nil {
			if name, ok := strings.CutPrefix(m[2], prefix); ok {
				status[name] = m[1]
			}
		} else if m := startLine.FindStringSubmatch(sc.Text()); m != nil {
			if name, ok := strings.CutPrefix(m[1], prefix); ok && status[name] == "" {
				status[name] = "RUN"
			}
		}
	}
	return status, sc.Err()
}

// countFolder counts the cases of the spec files in testdata/folder by
// status (nil when the folder did not run); log is the runner's output.
func countFolder(testdata, folder string, status map[string]string, log string) (counts, error) {
	files, err := filepath.Glob(filepath.Join(testdata, folder, "*.json"))
	if err != nil {
		return counts{}, err
	}
	c := counts{log: log}
	for _, file := range files {
		c.addFile(filepath.Base(file), casesIn(file), status)
	}
	for i := range c.failures {
		c.failures[i] = folder + "/" + c.failures[i]
	}
	for i := range c.passes {
		c.passes[i] = folder + "/" + c.passes[i]
	}
	return c, nil
}

// addFile counts the cases of one spec file: by their own results, then
// all of them as skipped when the file was skipped as a whole, and the
// cases the runner did not reach in a file that did not pass as failed.
func (c *counts) addFile(name string, cases int, status map[string]string) {
	ran := 0
	for test, st := range status {
		if !strings.HasPrefix(test, name+"/") {
			continue
		}
		ran++
		switch st {
		case "PASS":
			c.passed++
			c.passes = append(c.passes, test)
		case "SKIP":
			c.skipped++
		case "FAIL":
			c.failed++
			c.failures = append(c.failures, test)
		default:
			c.failed++
			c.notRun++
			c.failures = append(c.failures, test)
		}
	}
	switch st := status[name]; {
	case st == "SKIP" && ran == 0:
		c.skipped += cases
		c.skippedFiles++
	case st == "PASS" || st == "SKIP":
	case ran < cases:
		c.failed += cases - ran
		c.notRun += cases - ran
		c.failures = append(c.failures, name+" (cases not run)")
	}
}

// casesIn is the number of cases in a spec file, at least 1 so that a file
// that fails as a whole counts.
func casesIn(file string) int {
	var spec struct {
		Tests []json.RawMessage `json:"tests"`
	}
	b, err := os.ReadFile(file)
	if err != nil || json.Unmarshal(b, &spec) != nil {
		return 1
	}
	return max(len(spec.Tests), 1)
}
