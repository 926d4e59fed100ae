package storage

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/rs/zerolog"
)

// TestCollMapAgainstAMap applies random sets and drops to a collMap, one
// change set per published state, and to a plain map as the model; every
// state must read as its model did, including older states after later
// changes (readers keep them), and keep its collections' editBytes sum.
func TestCollMapAgainstAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var states []collMap
	var models []map[string]*collection
	cur, model := collMap{}, map[string]*collection{}
	for step := range 2000 {
		changes := map[string]*collection{}
		for range 1 + r.IntN(4) {
			name := fmt.Sprint("c", r.IntN(80))
			if r.IntN(3) == 0 {
				changes[name] = nil
			} else {
				changes[name] = &collection{editBytes: int64(r.IntN(1000))}
			}
		}
		cur = cur.with(changes)
		model = maps.Clone(model)
		for name, c := range changes {
			if c == nil {
				delete(model, name)
			} else {
				model[name] = c
			}
		}
		states, models = append(states, cur), append(models, model)
		if step%100 == 0 {
			for i := range states {
				sameAsModel(t, states[i], models[i])
			}
		}
	}
}

func sameAsModel(t *testing.T, m collMap, model map[string]*collection) {
	t.Helper()
	if got := m.clone(); !maps.Equal(got, model) || m.len() != len(model) {
		t.Fatalf("collMap holds %d (len %d), the model %d", len(got), m.len(), len(model))
	}
	var sum int64
	for name, c := range model {
		sum += c.editBytes
		if got, ok := m.lookup(name); !ok || got != c {
			t.Fatalf("lookup(%s) = %v, %v", name, got, ok)
		}
	}
	if _, ok := m.lookup("absent"); ok || m.get("absent") != nil {
		t.Fatal("a name never set is found")
	}
	if sum != m.editBytes {
		t.Fatalf("editBytes %d, the collections' sum %d", m.editBytes, sum)
	}
}

// BenchmarkInsertAmongCollections is one insert a write into one of n
// collections of a database, without the log's sync: what a write costs
// as the collections grow in number (publishing copied every one: 101 µs
// an insert among 1,000 against 13.5 µs in a database of one).
func BenchmarkInsertAmongCollections(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			e, err := Open(b.TempDir(), Options{}, zerolog.New(io.Discard))
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			d, _ := e.Database(ctx, "db", true)
			err = d.Write(ctx, func(tx *Tx) error {
				for i := range n {
					if _, err := tx.EnsureCollection(ctx, fmt.Sprint("c", i)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			wctx := NoSync(ctx)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				err := d.Write(wctx, func(tx *Tx) error {
					return tx.Insert(wctx, "c0", doc(int32(i), "0123456789012345678901234567890123456789"))
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
