package storage

import "testing"

// TestCheckpointsBoundDoltsHasCache: checkpoints that keep writing new
// chunks fill Dolt's cache of stored addresses past hasCacheKeep (to its
// own bound of 100,000 without the trim); each checkpoint empties it once
// past that. It also fails if a new Dolt pin renames the cache's field.
func TestCheckpointsBoundDoltsHasCache(t *testing.T) {
	d := openDatabase(t, Options{})
	hc := hasCacheOf(d.cs)
	if hc == nil {
		t.Fatal("Dolt's chunk store has no field hasCache of the expected type: see storage/hascache.go")
	}
	next := uint32(0)
	mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx) })
	// A round adds about as many addresses as it inserts documents: a
	// fifth of the bound, so that one round cannot overshoot it far.
	const rounds, perRound = 30, hasCacheKeep / 5
	peak := 0
	for range rounds {
		mustWrite(t, d, func(tx *Tx) error {
			for range perRound {
				next++ // scattered over the key space, never twice
				id := int32(next * 2654435761 & (1<<31 - 1))
				if err := tx.Insert(ctx, "c", doc(id, randomPad(200))); err != nil {
					return err
				}
			}
			return nil
		})
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		peak = max(peak, hc.Len())
	}
	t.Logf("%d rounds, the cache peaked at %d addresses", rounds, peak)
	if peak > hasCacheKeep+hasCacheKeep/4 {
		t.Fatalf("the cache held %d addresses after a checkpoint, want about %d at most", peak, hasCacheKeep)
	}
	if peak < hasCacheKeep/4 {
		t.Fatalf("the cache peaked at %d addresses: the test no longer fills it", peak)
	}
}
