package storage

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A workload whose data set does not grow must not grow the node cache
// either: after each checkpoint the cache holds the current trees and
// little else. Without forgetting what a checkpoint replaced, it gains the
// old versions of every rewritten node at each checkpoint.
func TestSteadyCheckpointsKeepTheNodeCacheBounded(t *testing.T) {
	const rounds = 30
	d := openDatabase(t, Options{})
	var beyond, total []int64
	steadyRounds(t, d, rounds, func() {
		beyond = append(beyond, cachedBeyondTheRoot(t, d))
		total = append(total, d.engine.nodes.Bytes())
	})
	t.Logf("cached bytes by round: %v", total)
	t.Logf("of which beyond the current root: %v", beyond)
	// The current trees are the live data; what the cache holds beyond
	// them (the map of refs) must not grow with the checkpoints, and the
	// whole no more than the live trees vary.
	if first, last := beyond[2], beyond[rounds-1]; last > first+16<<10 {
		t.Errorf("the node cache grew by %d bytes beyond the current trees from round 3 to %d (%d to %d)",
			last-first, rounds, first, last)
	}
	checkCacheSteady(t, total)
}

// The same workload read only as a server reads: through snapshots, whose
// trees come from the branch's root held in memory, never read through
// the cache. The leaves those reads cache must still be forgotten when a
// checkpoint replaces them. When checkpoints cached only the inner nodes
// they wrote, a database root whose map of collections fits in one leaf
// was never cached, the walk that forgets had nowhere to start, and every
// round kept another copy of the leaves read (dumbobench's soak: 800 KB
// more at each checkpoint).
func TestSteadyCheckpointsForgetTheLeavesReadsCached(t *testing.T) {
	d := openDatabase(t, Options{})
	var total []int64
	steadyRounds(t, d, 30, func() { total = append(total, d.engine.nodes.Bytes()) })
	t.Logf("cached bytes by round: %v", total)
	checkCacheSteady(t, total)
}

// checkCacheSteady fails t if the node cache grew by more than the live
// trees vary from the third round to the last.
func checkCacheSteady(t *testing.T, total []int64) {
	t.Helper()
	if first, last := total[2], total[len(total)-1]; float64(last) > 1.25*float64(first) {
		t.Errorf("the node cache grew from %d bytes at round 3 to %d at round %d", first, last, len(total))
	}
}

// steadyRounds runs a workload whose data set does not grow: every round
// inserts, updates and deletes, keeping liveDocs documents, some out of
// line, with an index; then it checkpoints, reads every document through
// a snapshot, and calls after.
func steadyRounds(t *testing.T, d *Database, rounds int, after func()) {
	t.Helper()
	const (
		liveDocs = 400
		perRound = 40
	)
	rng := rand.New(rand.NewSource(19))
	docAt := func(id, version int) bsoncore.Document {
		v := fmt.Sprintf("doc %d version %d", id, version)
		if id%50 == 0 {
			v = strings.Repeat(v, 200) // out of line: a blob
		}
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(id)).
			AppendString("v", v).AppendInt32("n", int32(rng.Intn(1000))).Build()
	}
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.CreateCollection(ctx, "c", nil); err != nil {
			return err
		}
		if err := tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("n_1", false, "n")}); err != nil {
			return err
		}
		for id := range liveDocs {
			if err := tx.Insert(ctx, "c", docAt(id, 0)); err != nil {
				return err
			}
		}
		return nil
	})
	oldest, next := 0, liveDocs
	for round := 1; round <= rounds; round++ {
		mustWrite(t, d, func(tx *Tx) error {
			for range perRound {
				if err := tx.Insert(ctx, "c", docAt(next, round)); err != nil {
					return err
				}
				next++
				if err := tx.Delete(ctx, "c", idValue(int32(oldest))); err != nil {
					return err
				}
				oldest++
				if err := tx.Replace(ctx, "c", docAt(oldest+rng.Intn(next-oldest), round)); err != nil {
					return err
				}
			}
			return nil
		})
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(contents(t, d, "c")); n != liveDocs {
			t.Fatalf("round %d: %d documents, want %d", round, n, liveDocs)
		}
		after()
	}
}

// cachedBeyondTheRoot reads every node of the branch's current root (so
// the cache holds them all) and returns what the cache holds besides.
func cachedBeyondTheRoot(t *testing.T, d *Database) int64 {
	t.Helper()
	b := d.loadedBranch(DefaultBranch)
	st := b.state.Load()
	if !st.checkpointed {
		t.Fatal("the branch has edits after its checkpoint")
	}
	var live int64
	for addr := range treeNodes(t, d.ns, st.root.HashOf()) {
		nd, _ := d.ns.cache.peek(d.ns.key(addr))
		live += int64(nd.Size()) + nodeEntryOverhead
	}
	return d.engine.nodes.Bytes() - live
}
