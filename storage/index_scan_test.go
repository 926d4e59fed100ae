package storage

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dumbodb/dumbodb/index"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestIndexScanIntervalsOverEdits: index scans of random intervals, over a
// checkpointed map overlaid with hundreds of edits (inserts, moves to
// another key, deletes: far more than one batch of the edit cursor), give
// exactly the entries of a model, and a scan stopped early gives a prefix.
func TestIndexScanIntervalsOverEdits(t *testing.T) {
	d := openDatabase(t, Options{})
	model := map[int32]int32{} // _id -> a
	rng := rand.New(rand.NewPCG(3, 4))
	insertIndexedOnA(t, d, 0, 1500, func(id int32) int32 {
		model[id] = rng.Int32N(300)
		return model[id]
	})
	d.Checkpoint(ctx)
	mustWrite(t, d, func(tx *Tx) error {
		for i := int32(0); i < 900; i++ {
			id := rng.Int32N(2000)
			_, exists := model[id]
			switch {
			case exists && rng.IntN(3) == 0:
				delete(model, id)
				if err := tx.Delete(ctx, "c", int32Value(id)); err != nil {
					return err
				}
			case exists:
				model[id] = rng.Int32N(300)
				if err := tx.Replace(ctx, "c", ahDoc(id, model[id], id)); err != nil {
					return err
				}
			default:
				model[id] = rng.Int32N(300)
				if err := tx.Insert(ctx, "c", ahDoc(id, model[id], id)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	snap := mainSnapshot(t, d)
	for round := 0; round < 200; round++ {
		lo := rng.Int32N(320) - 10
		hi := lo + rng.Int32N(60)
		iv := index.Interval{Start: aKey(lo), Stop: aKey(hi)}
		var want []string
		for id, a := range model {
			if a >= lo && a < hi {
				want = append(want, fmt.Sprintf("%d/%d", a, id))
			}
		}
		sort.Slice(want, func(i, j int) bool { return lessEntry(want[i], want[j]) })
		limit := len(want)
		if round%3 == 0 && limit > 0 {
			limit = rng.IntN(limit) // a scan stopped early
		}
		it, err := snap.IndexScan(ctx, "c", "a_1", iv)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < limit {
			_, id, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			doc, _, err := snap.GetKey(ctx, "c", id)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d/%d", doc.Lookup("a").Int32(), doc.Lookup("_id").Int32()))
		}
		if fmt.Sprint(got) != fmt.Sprint(want[:limit]) {
			t.Fatalf("round %d, a in [%d, %d): got %v\nwant %v", round, lo, hi, got, want[:limit])
		}
	}
}

// aKey is the index key of {a: v}.
func aKey(v int32) []byte { return index.EncodeKey(nil, int32Value(v)) }

func int32Value(v int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, v)}
}

// lessEntry orders "a/_id" strings by a, then _id, numerically.
func lessEntry(x, y string) bool {
	var xa, xi, ya, yi int
	fmt.Sscanf(x, "%d/%d", &xa, &xi)
	fmt.Sscanf(y, "%d/%d", &ya, &yi)
	if xa != ya {
		return xa < ya
	}
	return xi < yi
}
