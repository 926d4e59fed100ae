package storage

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/dumbodb/dumbodb/index"
)

// TestGetKeysMatchesGetKey: a batch of keys in random order, with keys
// present, absent, repeated, past the last and before the first, over a
// checkpointed map overlaid with edits (updates, deletions, inserts),
// gives in each position what GetKey gives for that key.
func TestGetKeysMatchesGetKey(t *testing.T) {
	d := openDatabase(t, Options{})
	mustWrite(t, d, func(tx *Tx) error {
		tx.EnsureCollection(ctx, "c")
		for id := int32(0); id < 20000; id += 2 {
			if err := tx.Insert(ctx, "c", docKV(id, "v", "base")); err != nil {
				return err
			}
		}
		return nil
	})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, func(tx *Tx) error {
		for id := int32(0); id < 20000; id += 14 {
			if err := tx.Replace(ctx, "c", docKV(id, "v", "edited")); err != nil {
				return err
			}
			if err := tx.Delete(ctx, "c", idValue(id+2)); err != nil {
				return err
			}
			if err := tx.Insert(ctx, "c", docKV(id+1, "v", "new")); err != nil {
				return err
			}
		}
		return nil
	})
	snap := mainSnapshot(t, d)
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 50 {
		n := 1 + rng.IntN(300)
		keys := make([][]byte, n)
		for i := range keys {
			id := rng.Int32N(20400) - 200 // some before the first, some past the last
			if i > 0 && rng.IntN(10) == 0 {
				keys[i] = keys[rng.IntN(i)] // repeated
				continue
			}
			keys[i] = index.EncodeKey(nil, idValue(id))
		}
		got, err := snap.GetKeys(ctx, "c", keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			want, found, err := snap.GetKey(ctx, "c", k)
			if err != nil {
				t.Fatal(err)
			}
			if !found {
				want = nil
			}
			if !bytes.Equal(got[i], want) || (got[i] == nil) != (want == nil) {
				t.Fatalf("round %d, key %d: %v, GetKey gives %v", round, i, got[i], want)
			}
		}
	}
}
