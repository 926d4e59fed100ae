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
// A part is a top-level package with its sub-packages. Read from the
// bottom: the leaves (error codes, values, words, geometries, the
// JavaScript engine, interruption, the wire format) import nothing of
// ours but error codes and values; index and storage hold data and never
// the query language, which they are handed as compilers; query is the
// language; plan runs reads over storage; server speaks the protocol;
// cmd builds the programs.
var allowed = map[string][]string{
	"cmd":     {"server", "plan", "storage", "query", "value", "text", "mongoerr", "js", "index", "wire", "bench", "internal", "embedded", "console"},
	"server":  {"plan", "query", "value", "geo", "mongoerr", "js", "interrupt", "timeseries", "index", "storage", "wire", "auth"},
	"plan":    {"query", "value", "geo", "mongoerr", "interrupt", "index", "storage"},
	"query":   {"value", "text", "geo", "mongoerr", "js", "interrupt", "timeseries"},
	"storage": {"index", "value", "mongoerr", "interrupt", "timeseries", "internal"},
	"index":   {"value", "text", "geo", "mongoerr"},
	// timeseries: the bucket format of time-series collections, which
	// storage merges and query unpacks.
	"timeseries": {"value", "mongoerr"},
	// value: comparison, numbers, collation, formatting, paths and BSON
	// helpers; text: text search's words and languages (its errors for a
	// document's unsupported language); geo: geometries, their relations
	// and S2 cells; js: the JavaScript engine; interrupt: how long loops
	// look at their context; mongoerr: error codes.
	"value":     {"mongoerr"},
	"text":      {"mongoerr"},
	"geo":       {"value", "mongoerr"},
	"js":        {"value", "mongoerr"},
	"interrupt": {"mongoerr"},
	"mongoerr":  {},
	"wire":      {},
	// auth: users, roles, SCRAM and privileges; of ours it needs only
	// internal/durablefile.
	"auth":     {"internal"},
	"bench":    {},
	"embedded": {"server", "storage"},
	// console: the web console, a client of the server through the
	// official driver; of ours it imports nothing.
	"console": {},
	// Helpers that stand outside the server: internal/dumboproc runs the
	// dumbodb binary for the commands and their tests; internal/fuzzbson
	// turns fuzz input into BSON for every package's fuzz targets and
	// checks errors' codes; internal/durablefile replaces small files
	// durably for storage and auth; internal/testpki makes certificates
	// for the TLS tests; internal/lint holds the repository's lint checks;
	// internal/testload scales tests' timeouts to the machine's load;
	// internal/logschema checks the servers' log lines against mongod's
	// log schema for the tests, dumboproc and dumbospec (it imports
	// nothing of ours).
	"internal": {"mongoerr"},
}

// part names the part of the project a package belongs to.
func part(pkg string) string {
	first, _, _ := strings.Cut(strings.TrimPrefix(pkg, "github.com/dumbodb/dumbodb/"), "/")
	return first
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] == "github.com/dumbodb/dumbodb" {
			continue
		}
		from := part(fields[0])
		rules, known := allowed[from]
		if !known {
			t.Errorf("package %s is not in the import table of deps_test.go", fields[0])
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, "github.com/dumbodb/dumbodb/") {
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
