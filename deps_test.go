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

// allowed lists, for each part of the project, the parts it may import.
// A part is a top-level package with its sub-packages, except that query's
// sub-packages are parts of their own: index and storage need values and
// words without the whole query language.
var allowed = map[string][]string{
	"cmd":     {"server", "plan", "storage", "query", "query/value", "query/text", "query/mongoerr", "query/js", "index", "wire", "bench", "internal"},
	"server":  {"plan", "query", "query/value", "query/geo", "query/mongoerr", "query/js", "index", "storage", "wire", "auth"},
	"plan":    {"query", "query/value", "query/geo", "query/mongoerr", "index", "storage"},
	"storage": {"index", "query", "query/value", "query/mongoerr", "internal"},
	"index":   {"query/value", "query/text", "query/geo", "query/mongoerr"},
	"query":   {"query/value", "query/text", "query/geo", "query/mongoerr", "query/js"},
	// query/value: comparison, numbers, collation, formatting, paths and
	// BSON helpers; query/text: text search's words and languages (its
	// errors for a document's unsupported language); query/geo:
	// geometries, their relations and S2 cells; query/js: the JavaScript
	// engine; query/mongoerr: error codes.
	"query/value":    {"query/mongoerr"},
	"query/text":     {"query/mongoerr"},
	"query/geo":      {"query/value", "query/mongoerr"},
	"query/js":       {"query/value", "query/mongoerr"},
	"query/mongoerr": {},
	"wire":           {},
	// auth: users, roles, SCRAM and privileges; of ours it needs only
	// internal/durablefile.
	"auth":  {"internal"},
	"bench": {},
	// Helpers that stand outside the server: internal/dumboproc runs the
	// dumbodb binary for the commands and their tests; internal/fuzzbson
	// turns fuzz input into BSON for every package's fuzz targets and
	// checks errors' codes; internal/durablefile replaces small files
	// durably for storage and auth; internal/testpki makes certificates
	// for the TLS tests; internal/testload scales tests' timeouts to the
	// machine's load.
	"internal": {"query/mongoerr"},
}

// part names the part of the project a package belongs to.
func part(pkg string) string {
	rest := strings.TrimPrefix(pkg, "dumbodb/")
	parts := strings.SplitN(rest, "/", 3)
	if parts[0] == "query" && len(parts) > 1 {
		return parts[0] + "/" + parts[1]
	}
	return parts[0]
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
		from := part(fields[0])
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
			to := part(imp)
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
