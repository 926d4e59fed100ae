package storage

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// vonNeumann is doc(n) of the JSON study: doc(0) = {l: 0}, doc(n+1) is
// doc(n) with k<n> set to a copy of doc(n) and l set to n+1.
func vonNeumann(n int) bsoncore.Document {
	d := bsoncore.NewDocumentBuilder().AppendInt32("l", 0).Build()
	for i := 0; i < n; i++ {
		d = setField(setField(d, "l", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i+1))}),
			fmt.Sprintf("k%d", i), bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
	}
	return d
}

// setField sets a top-level field as $set does: in place, or appended.
func setField(d bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := d.Elements()
	found := false
	for _, el := range els {
		if el.Key() == key {
			b.AppendValue(key, v)
			found = true
		} else {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	if !found {
		b.AppendValue(key, v)
	}
	return b.Build()
}

func dirBytes(t *testing.T, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		// The logs are not storage: the write-ahead log is recycled, the
		// change log (which holds every replaced document whole, as
		// mongod's oplog does) is bounded by its retention.
		if err != nil || e.IsDir() || strings.Contains(p, string(filepath.Separator)+"wal"+string(filepath.Separator)) ||
			strings.Contains(p, string(filepath.Separator)+"changes"+string(filepath.Separator)) {
			return err
		}
		info, err := e.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLargeDocStorageGrowth: 100 commits that each change one field of a
// 1 MB document (length changes and array appends included) add under
// 64 KB each with the path index, and less than without it. (Chunks are
// compressed on disk and these documents repeat themselves, so whole
// documents cost far less than their size too.)
func TestLargeDocStorageGrowth(t *testing.T) {
	var doctreeGrowth int64
	for _, mode := range []struct {
		name      string
		threshold int
		check     func(perCommit int64) bool
	}{
		{"doctree", 0, func(n int64) bool { doctreeGrowth = n; return n < 64<<10 }},
		{"whole", -1, func(n int64) bool { return n > doctreeGrowth }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			e := openEngine(t, dir, Options{LargeDocThreshold: mode.threshold})
			defer e.Close()
			d, _ := e.Database(ctx, "db", true)
			// The edited string and array come first, so that every length
			// change moves the bytes of the whole document after them.
			doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("s", "").
				AppendArray("a", bsoncore.NewArrayBuilder().AppendInt32(0).Build()).Build()
			els, _ := vonNeumann(16).Elements()
			for _, el := range els {
				doc = setField(doc, el.Key(), el.Value())
			}
			if len(doc) < 800<<10 {
				t.Fatalf("document of %d bytes, want about 1 MB", len(doc))
			}
			put(t, d, "main", doc)
			commit(t, d)
			before := dirBytes(t, dir)
			const commits = 100
			for i := 1; i <= commits; i++ {
				doc = changeOneField(doc, i)
				put(t, d, "main", doc)
				commit(t, d)
			}
			per := (dirBytes(t, dir) - before) / commits
			t.Logf("%s: %d-byte document, %d bytes per commit", mode.name, len(doc), per)
			if !mode.check(per) {
				t.Errorf("%s: %d bytes per commit", mode.name, per)
			}
			if got := get(t, d, Revision{Branch: "main"}, 1); !bytes.Equal(got, doc) {
				t.Fatal("the stored document differs from the last one written")
			}
		})
	}
}

// changeOneField makes edit i: a nested value, a longer string, or an
// array append, in turn.
func changeOneField(doc bsoncore.Document, i int) bsoncore.Document {
	switch i % 3 {
	case 0:
		k := doc.Lookup("k12").Document()
		k = setField(k, "l", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))})
		return setField(doc, "k12", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: k})
	case 1:
		s := doc.Lookup("s").StringValue() + strings.Repeat("x", i)
		return setField(doc, "s", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)})
	}
	vals, _ := doc.Lookup("a").Array().Values()
	ab := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		ab.AppendValue(v)
	}
	ab.AppendInt32(int32(i))
	return setField(doc, "a", bsoncore.Value{Type: bsoncore.TypeArray, Data: ab.Build()})
}

func commit(t *testing.T, d *Database) {
	t.Helper()
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "edit"}); err != nil {
		t.Fatal(err)
	}
}

// randomLeaves is doc(n) with 16 random bytes in every sub-document, so
// that chunk compression cannot hide what is written.
func randomLeaves(rng *rand.Rand, n int) bsoncore.Document {
	d := bsoncore.NewDocumentBuilder().AppendInt32("l", 0).AppendBinary("r", 0, randBytes(rng)).Build()
	for i := 0; i < n; i++ {
		d = setField(d, "l", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i+1))})
		d = setField(d, "r", bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, 0, randBytes(rng))})
		d = setField(d, fmt.Sprintf("k%d", i), bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
	}
	return d
}

func randBytes(rng *rand.Rand) []byte {
	b := make([]byte, 16)
	rng.Read(b)
	return b
}

// TestLargeDocCopiesShareStorage: inserting a copy of a large document
// with a new _id and a longer string near its start adds a few nodes with
// the path index, and many times more without (every fixed-size blob chunk
// after the string moves; compressed on disk).
func TestLargeDocCopiesShareStorage(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	orig := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("s", "short").Build()
	els, _ := randomLeaves(rng, 14).Elements()
	for _, el := range els {
		orig = setField(orig, el.Key(), el.Value())
	}
	cp := setField(orig, "_id", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)})
	cp = setField(cp, "s", bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "a longer string")})
	growth := map[string]int64{}
	for name, threshold := range map[string]int{"doctree": 0, "whole": -1} {
		dir := t.TempDir()
		e := openEngine(t, dir, Options{LargeDocThreshold: threshold})
		d, _ := e.Database(ctx, "db", true)
		put(t, d, "main", orig)
		commit(t, d)
		before := dirBytes(t, dir)
		put(t, d, "main", cp)
		commit(t, d)
		growth[name] = dirBytes(t, dir) - before
		e.Close()
	}
	t.Logf("%d-byte document; the copy added %d bytes with doctrees, %d whole", len(orig), growth["doctree"], growth["whole"])
	if growth["doctree"] > 64<<10 || growth["whole"] < 10*growth["doctree"] {
		t.Errorf("copy growth %v", growth)
	}
}
