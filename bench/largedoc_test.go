package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestOrdinalsFollowTheDefinition(t *testing.T) {
	want, _ := bson.Marshal(bson.D{{Key: "l", Value: int32(2)}, {Key: "k0", Value: bson.D{{Key: "l", Value: int32(0)}}},
		{Key: "k1", Value: bson.D{{Key: "l", Value: int32(1)}, {Key: "k0", Value: bson.D{{Key: "l", Value: int32(0)}}}}}})
	if got := vnDoc(ordinals(2), -1, 2); !bytes.Equal(got, want) {
		t.Fatalf("doc(2) = %s, want %s", got, bson.Raw(want))
	}
	// doc(n+1) is doc(n) with k<n> set to doc(n) and l set to n+1.
	subs := ordinals(12)
	for n := range 11 {
		var prev bson.D
		if err := bson.Unmarshal(vnDoc(subs[:n], -1, int32(n)), &prev); err != nil {
			t.Fatal(err)
		}
		prev[0].Value = int32(n + 1)
		prev = append(prev, bson.E{Key: fmt.Sprintf("k%d", n), Value: bson.Raw(subs[n])})
		want, _ := bson.Marshal(prev)
		if got := vnDoc(subs[:n+1], -1, int32(n+1)); !bytes.Equal(got, want) {
			t.Fatalf("doc(%d) is not doc(%d) extended", n+1, n)
		}
	}
}

func TestOrdinalSizes(t *testing.T) {
	subs := ordinals(16)
	for n := 0; n <= 16; n++ {
		if got := len(vnDoc(subs[:n], -1, int32(n))); got != ordinalSize(n) {
			t.Errorf("doc(%d) is %d bytes, ordinalSize says %d", n, got, ordinalSize(n))
		}
		if got := len(vnDoc(subs[:n], int32(n), int32(n))); got != vnSize(n) {
			t.Errorf("doc(%d) with _id is %d bytes, vnSize says %d", n, got, vnSize(n))
		}
	}
	if top := maxOrder(); top != 19 || vnSize(top) > maxBSON || vnSize(top+1) <= maxBSON {
		t.Errorf("maxOrder = %d (%d bytes; next %d), want 19 under %d", top, vnSize(top), vnSize(top+1), maxBSON)
	}
	for n, want := range map[int]string{0: "21B", 6: "1KB", 14: "256KB", 16: "1MB", 19: "8MB"} {
		if got := sizeLabel(vnSize(n)); got != want {
			t.Errorf("sizeLabel(vnSize(%d) = %d) = %s, want %s", n, vnSize(n), got, want)
		}
	}
}

func TestLargeDocPlan(t *testing.T) {
	for _, quick := range []bool{true, false} {
		total, orders, _ := largeDocPlan(quick)
		for _, n := range orders {
			c := newVNColl(n, total)
			if got := c.count * c.size; got > total+c.size || (c.count > 1 && got > total) || got < total/2 {
				t.Errorf("quick %v, order %d: %d documents of %d bytes for a total of %d", quick, n, c.count, c.size, total)
			}
		}
	}
	names := map[string]bool{}
	for _, b := range largeDocBenchmarks(&Config{Quick: true}) {
		if names[b.Name] || b.Group != GroupLargeDoc {
			t.Errorf("benchmark %s repeated or out of its group", b.Name)
		}
		names[b.Name] = true
	}
	for _, want := range []string{"LargeDoc/Export/256KB", "LargeDoc/Sort/1MB", "LargeDoc/StorageGrowth/1MB", "LargeDoc/StorageGrowth/1MB/RandomLeaves"} {
		if !names[want] {
			t.Errorf("quick LargeDoc family lacks %s: %v", want, names)
		}
	}
}

func TestWithLChangesOnlyL(t *testing.T) {
	doc := vnDoc(ordinals(5), 7, 7)
	got := withL(doc, 42)
	if len(got) != len(doc) || got.Lookup("l").Int32() != 42 || got.Lookup("_id").Int32() != 7 {
		t.Fatalf("withL = %s", got)
	}
	if !bytes.Equal(got.Lookup("k4").Value, doc.Lookup("k4").Value) {
		t.Error("withL changed k4")
	}
}

func TestGrowthDocs(t *testing.T) {
	for _, doc := range []bson.Raw{growthDoc(), growthRandomDoc()} {
		if err := doc.Validate(); err != nil || sizeLabel(len(doc)) != "1MB" || doc.Lookup("_id").Int32() != 1 {
			t.Errorf("growth document of %d bytes (%s), _id %v: %v", len(doc), sizeLabel(len(doc)), doc.Lookup("_id"), err)
		}
		growthEditsHitExistingPaths(t, doc)
	}
	doc := growthRandomDoc()
	if want := randomOrdinalSize(growthRandomOrder) + 9; len(doc) != want {
		t.Errorf("RandomLeaves document is %d bytes, randomOrdinalSize says %d", len(doc), want)
	}
	// Random leaves differ between copies of the same ordinal.
	if bytes.Equal(doc.Lookup("k3", "k1").Value, doc.Lookup("k2", "k1").Value) {
		t.Error("two copies of doc(1) are equal in the RandomLeaves document")
	}
}

func growthEditsHitExistingPaths(t *testing.T, doc bson.Raw) {
	n := int(doc.Lookup("l").Int32())
	kinds := map[string]bool{}
	for c := 1; c <= growthCommits; c++ {
		op := growthEdit(c, n)
		kinds[op[0].Key] = true
		path := op[0].Value.(bson.D)[0].Key
		parent, _, _ := strings.Cut(path, ".")
		if strings.Contains(path, ".") {
			if _, err := doc.LookupErr(parent); err != nil {
				t.Errorf("edit %d: %v on %s, whose %s is missing", c, op, path, parent)
			}
		}
	}
	if len(kinds) != 3 {
		t.Errorf("edits use %v, want $set, $push and $inc", kinds)
	}
}

func TestDirBytesSkipsWAL(t *testing.T) {
	dir := t.TempDir()
	for path, size := range map[string]int{"a": 10, "db/b": 20, "db/wal/seg": 1000} {
		p := filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := dirBytes(dir); err != nil || got != 30 {
		t.Errorf("dirBytes = %d, %v; want 30", got, err)
	}
}

func TestSideBySide(t *testing.T) {
	meta := Meta{Baseline: "ferret", Targets: []Target{{Name: "dumbo"}, {Name: "whole", Only: "^LargeDoc/"}, {Name: "ferret"}}}
	rs := []Result{
		{Benchmark: "LargeDoc/Export/1MB", Group: GroupLargeDoc, Target: "dumbo", Unit: "op", Status: StatusOK, SamplesUS: []float64{2000}},
		{Benchmark: "LargeDoc/Export/1MB", Group: GroupLargeDoc, Target: "whole", Unit: "op", Status: StatusOK, SamplesUS: []float64{4000}},
		{Benchmark: "LargeDoc/Export/1MB", Group: GroupLargeDoc, Target: "ferret", Unit: "op", Status: StatusOK, SamplesUS: []float64{1e6}},
		{Benchmark: "LargeDoc/StorageGrowth/1MB", Group: GroupLargeDoc, Target: "dumbo", Unit: "B/commit", Quantity: true, Status: StatusOK, SamplesUS: []float64{3000}},
		{Benchmark: "LargeDoc/StorageGrowth/1MB", Group: GroupLargeDoc, Target: "whole", Unit: "B/commit", Quantity: true, Status: StatusOK, SamplesUS: []float64{600000}},
		{Benchmark: "LargeDoc/StorageGrowth/1MB", Group: GroupLargeDoc, Target: "ferret", Unit: "B/commit", Quantity: true, Status: StatusNA},
	}
	Summarize(rs, meta.Baseline)
	md := Markdown(meta, rs)
	for _, want := range []string{
		"- target `whole`:  (only benchmarks matching `^LargeDoc/`)",
		"| LargeDoc/Export/1MB | dumbo | 2000 | 2000 | 0.00 | 0.002 | 🟢 faster |  |",
		"| LargeDoc/StorageGrowth/1MB | dumbo | 3000 B/commit | | |  |  | |",
		"| benchmark | dumbo | whole | ferret | dumbo ÷ whole | dumbo ÷ ferret |",
		"| LargeDoc/Export/1MB | 2.00 ms | 4.00 ms | 1.00 s | 0.50 🟢 | 0.002 🟢 |",
		"| LargeDoc/StorageGrowth/1MB | 3000 B/commit | 600000 B/commit | n/a | 0.005 🟢 | |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
}
