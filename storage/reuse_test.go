package storage

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

// TestSlicePoolEmptiesWhatItKeeps: a slice given back comes out empty,
// with its room, and holds no reference to what it held.
func TestSlicePoolEmptiesWhatItKeeps(t *testing.T) {
	p := slicePool[walOp]{max: 16}
	s := append(p.get(), walOp{op: opPut, key: []byte("k"), value: []byte("v")}, walOp{op: opDelete, key: []byte("j")})
	p.put(s)
	got := p.get()
	if len(got) != 0 {
		t.Fatalf("a kept slice came back with %d elements", len(got))
	}
	if cap(got) > 0 { // the pool may have dropped it (a collection)
		for i, o := range got[:cap(got)] {
			if o.key != nil || o.value != nil || o.op != "" {
				t.Fatalf("element %d still holds %+v", i, o)
			}
		}
	}
	p.put(make([]walOp, 0, p.max+1)) // too large: not kept
	if got := p.get(); cap(got) > p.max {
		t.Fatalf("a slice of %d kept, past the bound of %d", cap(got), p.max)
	}
}

// TestSlicePoolReusesItsBoxes: once warm, a slice given back and taken
// again costs no allocation (each put boxed the slice's header anew).
func TestSlicePoolReusesItsBoxes(t *testing.T) {
	p := slicePool[byte]{max: 64}
	p.put(make([]byte, 0, 32))
	allocs := testing.AllocsPerRun(1000, func() {
		s := append(p.get(), 'x')
		p.put(s)
	})
	if allocs > 0.1 { // a collection may empty the pool now and then
		t.Fatalf("%.2f allocations a get and put", allocs)
	}
}

// TestReusedEventsReachTheLogWhole: plain writes from several goroutines,
// whose change events' slices are reused once appended, leave every
// event in the change log as written: each document's event once, its
// documentKey its own, in each writer's order.
func TestReusedEventsReachTheLogWhole(t *testing.T) {
	d := openDatabase(t, Options{})
	e := d.engine
	mustWrite(t, d, func(tx *Tx) error { _, err := tx.EnsureCollection(ctx, "c"); return err })
	seq := e.Changes().Stats().Next
	const writers, writes, perWrite = 4, 60, 7
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				err := d.Write(ctx, func(tx *Tx) error {
					for j := range perWrite {
						id := int32((w*writes+i)*perWrite + j)
						if err := tx.Insert(ctx, "c", doc(id, fmt.Sprint(w))); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	seen, last := map[int32]bool{}, map[string]int32{}
	for _, entry := range readChanges(t, e.Changes(), seq) {
		for _, ev := range entry.Events {
			id := ev.Doc.Lookup("_id").Int32()
			writer := ev.Doc.Lookup("v").StringValue()
			if ev.Op != "insert" || ev.Key.Lookup("_id").Int32() != id || seen[id] {
				t.Fatalf("event %s of %d (key %v), seen before: %v", ev.Op, id, ev.Key, seen[id])
			}
			if prev, ok := last[writer]; ok && id <= prev {
				t.Fatalf("writer %s: %d after %d", writer, id, prev)
			}
			seen[id], last[writer] = true, id
		}
	}
	if len(seen) != writers*writes*perWrite {
		t.Fatalf("%d insert events, want %d", len(seen), writers*writes*perWrite)
	}
}

// TestEventsQueuedBeforeAPanicStayTheirs: a write that panics after its
// events were queued (the panic step write.published) leaves them to the
// change log: the next write must not reuse their slice, and the log
// holds each write's own events.
func TestEventsQueuedBeforeAPanicStayTheirs(t *testing.T) {
	d := openDatabase(t, Options{})
	e := d.engine
	mustWrite(t, d, func(tx *Tx) error { _, err := tx.EnsureCollection(ctx, "c"); return err })
	seq := e.Changes().Stats().Next
	insert := func(from int32) error {
		return d.Write(ctx, func(tx *Tx) error {
			for id := from; id < from+5; id++ {
				if err := tx.Insert(ctx, "c", doc(id, fmt.Sprint(from))); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := e.InjectPanic("write.published", 1); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the injected panic did not come")
			}
		}()
		insert(0)
	}()
	if err := insert(100); err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, entry := range readChanges(t, e.Changes(), seq) {
		for _, ev := range entry.Events {
			got = append(got, ev.Doc.Lookup("_id").Int32())
		}
	}
	if want := []int32{0, 1, 2, 3, 4, 100, 101, 102, 103, 104}; !slices.Equal(got, want) {
		t.Fatalf("the change log holds the inserts of %v, want %v", got, want)
	}
}
