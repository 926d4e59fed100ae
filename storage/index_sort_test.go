package storage

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/sync/errgroup"
)

// withIndexBuildMemory runs the test with a sort budget of n bytes.
func withIndexBuildMemory(t *testing.T, n int64) {
	before := IndexBuildMemory()
	SetIndexBuildMemory(n)
	t.Cleanup(func() { SetIndexBuildMemory(before) })
}

// TestEntrySorterMergesSpilledRuns: entries added in random order, many
// with equal key fields, come out of runs spilled to disk and the one in
// memory in exactly the sorted order, and the spill files are gone.
func TestEntrySorterMergesSpilledRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sorters := []*entrySorter{newEntrySorter(2000), newEntrySorter(2000)}
	var want []string
	for i := range 3000 {
		fields := fmt.Appendf(nil, "k%03d|", rng.IntN(200)) // about 15 entries a key
		id := fmt.Appendf(nil, "%05d", i)
		value := fmt.Appendf(nil, "v%d", i)
		if err := sorters[i%2].add(fields, id, value); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(fields)+string(id)+"="+string(value))
	}
	if len(sorters[0].spills) < 10 {
		t.Fatalf("%d runs spilled with a budget of 2,000 bytes", len(sorters[0].spills))
	}
	slices.Sort(want)
	for _, s := range sorters {
		s.finish()
	}
	var got []string
	err := mergeSorted(sorters, func(e sortedEntry) error {
		if string(e.fields())+string(e.id()) != string(e.key) || len(e.fields()) != 5 {
			t.Fatalf("entry %q splits into %q and %q", e.key, e.fields(), e.id())
		}
		got = append(got, string(e.key)+"="+string(e.value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("merged %d entries, not the %d sorted ones", len(got), len(want))
	}
	files := sorters[0].spills[0]
	for _, s := range sorters {
		s.close()
	}
	if _, err := files.Stat(); err == nil {
		t.Fatal("a spill file is still open after close")
	}
	left, _ := os.ReadDir(spillDir())
	for _, e := range left {
		if len(e.Name()) > 12 && e.Name()[:12] == "index-build-" {
			t.Fatalf("spill file %s left in %s", e.Name(), spillDir())
		}
	}
}

// indexTestDoc has a scalar a, a multikey tags array and a unique u.
func indexTestDoc(id int32, rng *rand.Rand) bsoncore.Document {
	tags := bsoncore.NewArrayBuilder()
	for range rng.IntN(4) {
		tags.AppendString(fmt.Sprintf("%c%d", "tT"[rng.IntN(2)], rng.IntN(30))) // cases a collation folds
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", id).AppendInt32("a", rng.Int32N(100)).
		AppendArray("tags", tags.Build()).AppendInt32("u", id*7).Build()
}

// TestSortedBuildEqualsInsertedIndex: indexes built from the sorted,
// spilled stream of a collection's documents are the very maps (same
// hash) that inserting each document's entries gave, so that diffs and
// merges between them agree; scalar, multikey, compound, unique and with
// a collation.
func TestSortedBuildEqualsInsertedIndex(t *testing.T) {
	withIndexBuildMemory(t, 16<<10) // a few hundred entries a run
	caseless := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("tags", 1).Build()).
		AppendString("name", "tags_caseless").
		AppendDocument("collation", bsoncore.NewDocumentBuilder().AppendString("locale", "en").AppendInt32("strength", 2).Build()).
		Build()
	specs := []bsoncore.Document{indexSpec("a_1", false, "a"), indexSpec("tags_1", false, "tags"),
		indexSpec("a_1_u_1", false, "a", "u"), indexSpec("u_1", true, "u"), caseless}
	var hashes [2][]string
	for run, afterwards := range []bool{false, true} {
		d := openDatabase(t, Options{})
		rng := rand.New(rand.NewPCG(5, 6))
		mustWrite(t, d, func(tx *Tx) error {
			tx.EnsureCollection(ctx, "c")
			if !afterwards {
				if err := tx.SetIndexes(ctx, "c", specs); err != nil {
					return err
				}
			}
			for id := range int32(5000) {
				if err := tx.Insert(ctx, "c", indexTestDoc(id, rng)); err != nil {
					return err
				}
			}
			return nil
		})
		if afterwards {
			if err := d.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, d, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", specs) })
		}
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		c := mainSnapshot(t, d).st.colls.get("c")
		for _, ix := range c.indexes {
			hashes[run] = append(hashes[run], ix.spec.Name+" "+ix.base.HashOf().String())
			if ix.spec.Name == "tags_1" && !ix.multikey {
				t.Fatalf("tags_1 built without its multikey mark")
			}
		}
	}
	if !slices.Equal(hashes[0], hashes[1]) {
		t.Fatalf("maintained by inserts:\n%v\nbuilt sorted:\n%v", hashes[0], hashes[1])
	}
}

// TestSortedBuildRefusesDuplicateAcrossRuns: a unique index whose two
// documents share a key, far apart in the collection so that their
// entries land in different spilled runs, is refused with both named.
func TestSortedBuildRefusesDuplicateAcrossRuns(t *testing.T) {
	withIndexBuildMemory(t, 8<<10)
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error {
		tx.EnsureCollection(ctx, "c")
		for id := range int32(3000) {
			u := id
			if id == 2999 {
				u = 3 // the key of document 3
			}
			if err := tx.Insert(ctx, "c", ahDoc(id, 0, u)); err != nil {
				return err
			}
		}
		return nil
	})
	err := d.Write(ctx, func(tx *Tx) error {
		return tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("u_1", true, "u")})
	})
	var dup *DuplicateKeyError
	if !errors.As(err, &dup) || dup.Index != "u_1" {
		t.Fatalf("a unique build over a duplicate key: %v", err)
	}
	if ixs := mainSnapshot(t, d).Indexes("c"); len(ixs) != 0 {
		t.Fatalf("the refused index exists: %v", ixs)
	}
}

// TestBuildPanicReachesTheCaller: a panic in one of a build's goroutines
// stops the others as an error and is raised again in the goroutine that
// started them, where the command's recovery answers it.
func TestBuildPanicReachesTheCaller(t *testing.T) {
	var raised any
	func() {
		defer func() { raised = recover() }()
		var caught caughtPanic
		defer caught.rethrow()
		g := new(errgroup.Group)
		g.Go(caught.guard(func() error { panic("broken key") }))
		g.Go(caught.guard(func() error { return nil }))
		if err := g.Wait(); !errors.Is(err, errBuildPanicked) {
			t.Errorf("the group ended with %v", err)
		}
	}()
	if s, _ := raised.(string); !strings.HasPrefix(s, "broken key\n") {
		t.Fatalf("raised %v", raised)
	}
}
