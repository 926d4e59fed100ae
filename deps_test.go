// Package dumbodb_test holds repository-wide checks. TestImportDirection
// enforces the import rules stated in the allowed table below: which
// project packages each top-level package may import, and that only
// storage imports Dolt (run it with `make lint-deps`). What each package
// owns is in docs/design/layout.md.
package dumbodb_test

import (
	"os/exec"
	"strings"
	"testing"
)

// allowed lists, for each top-level package, the project packages it may
// import. Sub-packages count as their top-level package.
var allowed = map[string][]string{
	"cmd":     {"server", "plan", "storage", "query", "index", "wire", "bench", "internal"},
	"server":  {"plan", "query", "index", "storage", "wire"},
	"plan":    {"query", "index", "storage"},
	"storage": {"index", "query"},
	"index":   {"query"},
	"query":   {},
	"wire":    {},
	"bench":   {},
	// Helpers that stand outside the server: internal/dumboproc runs the
	// dumbodb binary for the commands and their tests; internal/fuzzbson
	// turns fuzz input into BSON for every package's fuzz targets and
	// checks errors' codes.
	"internal": {"query"},
}

func topLevel(pkg string) string {
	rest := strings.TrimPrefix(pkg, "dumbodb/")
	top, _, _ := strings.Cut(rest, "/")
	return top
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] == "dumbodb" {
			continue
		}
		from := topLevel(fields[0])
		rules, known := allowed[from]
		if !known {
			t.Errorf("package %s is not in the import table of deps_test.go", fields[0])
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, "dumbodb/") {
				if strings.HasPrefix(imp, "github.com/dolthub/") && from != "storage" {
					t.Errorf("%s imports Dolt (%s): only storage may", fields[0], imp)
				}
				continue
			}
			to := topLevel(imp)
			if to == from || contains(rules, to) {
				continue
			}
			t.Errorf("%s imports %s: %s may import only %v", fields[0], imp, from, rules)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
