package server_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// badDBNames would escape the data directory, or land in its root, if a path
// trusted them.
var badDBNames = []string{"../../../escaped", "..", ".", "", "a/b", `a\b`, "../x", "x\x00y"}

// TestNamespacePathsStayInDataDir sends each bad database name through every
// path that names a database and checks that each is refused with
// InvalidNamespace and that nothing appeared outside the databases the test
// made.
func TestNamespacePathsStayInDataDir(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	shop := c.Database("shop")
	mustRun(t, shop, bson.D{{Key: "insert", Value: "src"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	parent := filepath.Dir(ts.dir)
	parentBefore, dirBefore := listDir(t, parent), listDir(t, ts.dir)

	paths := map[string]func(bad string) bson.D{
		"$out": func(bad string) bson.D {
			return aggregateStage(bson.D{{Key: "$out", Value: bson.D{{Key: "db", Value: bad}, {Key: "coll", Value: "x"}}}})
		},
		"$merge": func(bad string) bson.D {
			return aggregateStage(bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: bson.D{{Key: "db", Value: bad}, {Key: "coll", Value: "x"}}}}}})
		},
		"renameCollection": func(bad string) bson.D {
			return bson.D{{Key: "renameCollection", Value: "shop.src"}, {Key: "to", Value: bad + ".x"}}
		},
	}
	for path, cmd := range paths {
		for _, bad := range badDBNames {
			db := shop
			if path == "renameCollection" {
				db = c.Database("admin")
			}
			_, err := run(t, db, cmd(bad))
			if err == nil {
				t.Fatalf("%s to %q succeeded", path, bad)
			}
			wantCode(t, err, 73, "")
		}
	}
	for _, bad := range badDBNames {
		_, err := run(t, c.Database(bad), bson.D{{Key: "insert", Value: "x"}, {Key: "documents", Value: bson.A{bson.D{}}}})
		if err == nil {
			t.Fatalf("$db %q accepted", bad)
		}
	}
	if got := listDir(t, parent); !equalStrings(got, parentBefore) {
		t.Fatalf("the data directory's parent changed: %v, was %v", got, parentBefore)
	}
	if got := listDir(t, ts.dir); !equalStrings(got, dirBefore) {
		t.Fatalf("the data directory changed: %v, was %v", got, dirBefore)
	}
}

// TestOutWritesToNamedBranch: $out and $merge write to the branch their
// target names, and without a target database to the aggregate's own
// branch.
func TestOutWritesToNamedBranch(t *testing.T) {
	c := startServer(t).client()
	shop := c.Database("shop")
	mustRun(t, shop, bson.D{{Key: "insert", Value: "src"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	mustRun(t, shop, bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "one"}})
	mustRun(t, shop, bson.D{{Key: "dumboBranch", Value: 1}, {Key: "branch", Value: "feat"}})
	mustRun(t, shop, bson.D{{Key: "dumboTag", Value: 1}, {Key: "name", Value: "v1"}})

	mustRun(t, c.Database("shop@feat"), aggregateStage(bson.D{{Key: "$out", Value: "onFeat"}}))
	mustRun(t, shop, aggregateStage(bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: bson.D{{Key: "db", Value: "shop@feat"}, {Key: "coll", Value: "merged"}}}}}}))
	for _, coll := range []string{"onFeat", "merged"} {
		if n, _ := c.Database("shop@feat").Collection(coll).CountDocuments(ctx, bson.D{}); n != 1 {
			t.Fatalf("shop@feat.%s has %d documents, want 1", coll, n)
		}
		if n, _ := shop.Collection(coll).CountDocuments(ctx, bson.D{}); n != 0 {
			t.Fatalf("shop.%s (main) has %d documents, want 0", coll, n)
		}
	}
	_, err := run(t, shop, aggregateStage(bson.D{{Key: "$out", Value: bson.D{{Key: "db", Value: "shop@v1"}, {Key: "coll", Value: "x"}}}}))
	wantCode(t, err, 20000, "ReadOnlyRevision")
}

func aggregateStage(stage bson.D) bson.D {
	return bson.D{{Key: "aggregate", Value: "src"}, {Key: "pipeline", Value: bson.A{stage}}, {Key: "cursor", Value: bson.D{}}}
}

// listDir lists dir's entries but the spare databases the engine makes in
// the background after a creation (".newdb-", docs/format/root.md).
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".newdb-") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
