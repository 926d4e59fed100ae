package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
)

// fieldModel is a large document as an ordered list of string fields
// after _id: what a whole-document update would make of it.
type fieldModel struct {
	names []string
	vals  []string
}

func (m *fieldModel) set(name, v string) {
	if i := slices.Index(m.names, name); i >= 0 {
		m.vals[i] = v
		return
	}
	m.names, m.vals = append(m.names, name), append(m.vals, v)
}

func (m *fieldModel) unset(name string) {
	if i := slices.Index(m.names, name); i >= 0 {
		m.names, m.vals = slices.Delete(m.names, i, i+1), slices.Delete(m.vals, i, i+1)
	}
}

func (m *fieldModel) bytes(id int32) []byte {
	b := bsoncore.NewDocumentBuilder().AppendInt32("_id", id)
	for i, n := range m.names {
		b.AppendString(n, m.vals[i])
	}
	return b.Build()
}

// partialSet is FieldUpdate.Apply for {$set: {name: v}} (unset: $unset),
// made on the fields it is given as the update language would.
func partialSet(name, v string, unset bool) func(bsoncore.Document) (bsoncore.Document, bool, error) {
	return func(part bsoncore.Document) (bsoncore.Document, bool, error) {
		els, err := part.Elements()
		if err != nil {
			return nil, false, err
		}
		b := bsoncore.NewDocumentBuilder()
		found := false
		for _, e := range els {
			switch {
			case e.Key() != name:
				b.AppendValue(e.Key(), e.Value())
			case !unset:
				b.AppendString(name, v)
				found = true
			}
		}
		if !found && !unset {
			b.AppendString(name, v)
		}
		out := b.Build()
		return out, !bytes.Equal(out, part), nil
	}
}

// TestUpdateFieldsMatchesWholeDocumentUpdates is a metamorphic test of
// updates by field: random sets and unsets of large documents' fields
// (an indexed one among them) against a model of whole-document updates,
// compared byte for byte after each write, across checkpoints, and after
// a crash copy that replays the field records.
func TestUpdateFieldsMatchesWholeDocumentUpdates(t *testing.T) {
	// Documents of about 30 KB, stored as doctrees from 20 KB: updates
	// after a checkpoint make their ropes from the trees' nodes.
	d := openDatabase(t, Options{LargeDocThreshold: 20 << 10})
	const docs = 3
	models := make([]*fieldModel, docs)
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := range models {
			// 300 fields: ropes of three blocks, and names enough
			// outside them that updates append past the name index.
			models[i] = &fieldModel{}
			for f := range 300 {
				models[i].set(fmt.Sprint("f", f), strings.Repeat(fmt.Sprint(f%10), 100))
			}
			models[i].set("k", "k0")
			if err := tx.Insert(ctx, "c", models[i].bytes(int32(i))); err != nil {
				return err
			}
		}
		key := bsoncore.NewDocumentBuilder().AppendInt32("k", 1).Build()
		spec := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", key).AppendString("name", "k_1").Build()
		return tx.SetIndexes(ctx, "c", []bsoncore.Document{spec})
	})
	rng := rand.New(rand.NewSource(1))
	check := func(d *Database, when string) {
		t.Helper()
		snap := mainSnapshot(t, d)
		for i, m := range models {
			got, found, err := snap.Get(ctx, "c", idValue(int32(i)))
			if err != nil || !found {
				t.Fatalf("%s: document %d: found %v, %v", when, i, found, err)
			}
			if !bytes.Equal(got, m.bytes(int32(i))) {
				t.Fatalf("%s: document %d differs from the model", when, i)
			}
			checkIndexedK(t, snap, int32(i), m, when)
		}
	}
	for step := range 600 {
		i := rng.Intn(docs)
		name := fmt.Sprint("f", rng.Intn(500))
		if rng.Intn(5) == 0 {
			name = "k"
		}
		v := fmt.Sprintf("%d-%s", step, strings.Repeat("v", rng.Intn(300)))
		unset := name != "k" && rng.Intn(4) == 0
		mustWrite(t, d, func(tx *Tx) error {
			res, err := tx.UpdateFields(ctx, "c", idValue(int32(i)), FieldUpdate{
				Fields: []string{name}, Apply: partialSet(name, v, unset), MaxSize: 16 << 20})
			if err != nil {
				return err
			}
			if !res.Handled || !res.Found {
				t.Fatalf("step %d: not updated by field: %+v", step, res)
			}
			if res.Changed && tx.ops[len(tx.ops)-1].op != opFields {
				t.Fatalf("step %d: logged as %q", step, tx.ops[len(tx.ops)-1].op)
			}
			return nil
		})
		if unset {
			models[i].unset(name)
		} else {
			models[i].set(name, v)
		}
		check(d, fmt.Sprint("step ", step))
		if step%250 == 249 {
			if err := d.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			check(d, fmt.Sprint("checkpoint at step ", step))
		}
	}
	_, crashed := reopenCrashed(t, d.engine.dir)
	check(crashed, "replay of the crash copy")
}

// checkIndexedK checks that the k_1 index finds document id under its
// model's k and under no other of the values the test sets.
func checkIndexedK(t *testing.T, snap *Snapshot, id int32, m *fieldModel, when string) {
	t.Helper()
	want := m.vals[slices.Index(m.names, "k")]
	it, err := snap.IndexScan(ctx, "c", "k_1", index.Interval{})
	if err != nil {
		t.Fatal(err)
	}
	idKey := encodeID(idValue(id))
	n := 0
	for {
		entry, key, err := it.Next(ctx)
		if err != nil || entry == nil {
			break
		}
		if !bytes.Equal(key, idKey) {
			continue
		}
		n++
		if !bytes.Contains(entry, []byte(want)) {
			t.Fatalf("%s: document %d's index entry is not under k %.20q", when, id, want)
		}
	}
	if n != 1 {
		t.Fatalf("%s: document %d has %d entries in k_1", when, id, n)
	}
}

// TestUpdateFieldsLeavesOthersToTheWholeDocument: small documents, those
// that repeat a top-level name, capped collections, collections keeping
// change-stream images, indexes whose fields cannot be named and
// multi-statement transactions are not updated by field; a missing
// document is reported as not found.
func TestUpdateFieldsLeavesOthersToTheWholeDocument(t *testing.T) {
	d := openDatabase(t, Options{})
	big := strings.Repeat("x", fieldUpdateMinBytes)
	images := bsoncore.NewDocumentBuilder().AppendDocument("changeStreamPreAndPostImages",
		bsoncore.NewDocumentBuilder().AppendBoolean("enabled", true).Build()).Build()
	capped := bsoncore.NewDocumentBuilder().AppendBoolean("capped", true).AppendInt64("size", 1<<20).Build()
	if err := d.Write(ctx, func(tx *Tx) error {
		for _, c := range []struct {
			name string
			opts bsoncore.Document
		}{{"plain", nil}, {"images", images}, {"capped", capped}, {"wild", nil}} {
			if _, err := tx.CreateCollection(ctx, c.name, c.opts); err != nil {
				return err
			}
			d := doc(1, big)
			if c.name == "wild" { // no key of a wildcard index may pass 4 KB
				m := &fieldModel{}
				for f := range fieldUpdateMinBytes / 16 {
					m.set(fmt.Sprint("f", f), "0123456789")
				}
				d = m.bytes(1)
			}
			if err := tx.Insert(ctx, c.name, d); err != nil {
				return err
			}
		}
		if err := tx.Insert(ctx, "plain", doc(2, "small")); err != nil {
			return err
		}
		twice := bsoncore.NewDocumentBuilder().AppendInt32("_id", 4).AppendString("x", big).AppendString("x", "again").Build()
		if err := tx.Insert(ctx, "plain", twice); err != nil {
			return err
		}
		wild := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendString("name", "w").
			AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("$**", 1).Build()).Build()
		return tx.SetIndexes(ctx, "wild", []bsoncore.Document{wild})
	}); err != nil {
		t.Fatal(err)
	}
	u := FieldUpdate{Fields: []string{"n"}, Apply: partialSet("n", "1", false), MaxSize: 16 << 20}
	cases := []struct {
		coll        string
		id          int32
		handled     bool
		found, done bool
	}{
		{"plain", 1, true, true, true},
		{"plain", 2, false, false, false},
		{"plain", 3, true, false, false},
		{"plain", 4, false, false, false}, // a repeated name
		{"images", 1, false, false, false},
		{"capped", 1, false, false, false},
		{"wild", 1, false, false, false},
	}
	for _, c := range cases {
		if err := d.Write(ctx, func(tx *Tx) error {
			res, err := tx.UpdateFields(ctx, c.coll, idValue(c.id), u)
			if res.Handled != c.handled || res.Found != c.found || res.Changed != c.done {
				t.Errorf("%s %d: %+v, want handled %v found %v changed %v", c.coll, c.id, res, c.handled, c.found, c.done)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	txn, err := d.BeginTxn(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	if res, err := txn.tx.UpdateFields(ctx, "plain", idValue(1), u); err != nil || res.Handled {
		t.Errorf("in a transaction: %+v, %v", res, err)
	}
	tooBig := FieldUpdate{Fields: []string{"n"}, Apply: partialSet("n", big, false), MaxSize: 2 * fieldUpdateMinBytes}
	err = d.Write(ctx, func(tx *Tx) error {
		_, err := tx.UpdateFields(ctx, "plain", idValue(1), tooBig)
		return err
	})
	if !errors.Is(err, ErrDocumentTooLarge) {
		t.Errorf("a document past MaxSize: %v", err)
	}
}

// BenchmarkUpdateFields: a one-field update by field of an 8 MB document
// of 8,192 fields: "steady", each after the last (the rope is in the
// edit), and "first", each the first after a checkpoint (the rope is made
// from the stored doctree). go test -run XXX -bench UpdateFields ./storage/
func BenchmarkUpdateFields(b *testing.B) {
	d := openDatabase(b, Options{})
	m := &fieldModel{}
	for f := range 8 << 10 {
		m.set(fmt.Sprintf("f%05d", f), strings.Repeat("x", 1000))
	}
	if err := d.Write(ctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", m.bytes(1))
	}); err != nil {
		b.Fatal(err)
	}
	update := func(b *testing.B, i int) {
		err := d.Write(ctx, func(tx *Tx) error {
			v := fmt.Sprint(i)
			_, err := tx.UpdateFields(ctx, "c", idValue(1), FieldUpdate{Fields: []string{"n"}, Apply: partialSet("n", v, false), MaxSize: 16 << 20})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("steady", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			update(b, i)
		}
	})
	b.Run("first", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			if err := d.Checkpoint(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			update(b, i)
		}
	})
}

// TestUpdateFieldsBesideCheckpoints: writers update large documents by
// field while checkpoints fold their ropes beside them (run under -race);
// every document ends as its writer's model, and so does a crash copy.
func TestUpdateFieldsBesideCheckpoints(t *testing.T) {
	d := openDatabase(t, Options{LargeDocThreshold: 20 << 10})
	const writers = 3
	models := make([]*fieldModel, writers)
	if err := d.Write(ctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := range models {
			models[i] = &fieldModel{}
			for f := range 30 {
				models[i].set(fmt.Sprint("f", f), strings.Repeat("x", 1000))
			}
			if err := tx.Insert(ctx, "c", models[i].bytes(int32(i))); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	ckpts := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				ckpts <- nil
				return
			default:
			}
			if err := d.Checkpoint(ctx); err != nil {
				ckpts <- err
				return
			}
		}
	}()
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			rng := rand.New(rand.NewSource(int64(w)))
			for step := range 150 {
				name := fmt.Sprint("f", rng.Intn(40))
				v := fmt.Sprintf("%d-%s", step, strings.Repeat("w", rng.Intn(1200)))
				unset := rng.Intn(5) == 0
				err := d.Write(ctx, func(tx *Tx) error {
					_, err := tx.UpdateFields(ctx, "c", idValue(int32(w)), FieldUpdate{
						Fields: []string{name}, Apply: partialSet(name, v, unset), MaxSize: 16 << 20})
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				if unset {
					models[w].unset(name)
				} else {
					models[w].set(name, v)
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-ckpts; err != nil {
		t.Fatal(err)
	}
	check := func(d *Database, when string) {
		t.Helper()
		snap := mainSnapshot(t, d)
		for i, m := range models {
			got, _, err := snap.Get(ctx, "c", idValue(int32(i)))
			if err != nil || !bytes.Equal(got, m.bytes(int32(i))) {
				t.Fatalf("%s: document %d differs from its writer's model (%v)", when, i, err)
			}
		}
	}
	check(d, "after the writers")
	_, crashed := reopenCrashed(t, d.engine.dir)
	check(crashed, "replay of the crash copy")
}
