package server_test

// End-to-end tests of large documents: documents above the path
// index threshold must round-trip byte-exactly, update exactly as small
// documents do, and answer queries exactly as with the path index off.
// Documents come from the seeded generator in largedoc_gen_test.go; a failing
// run logs its seed, and DUMBO_LARGEDOC_SEED replays it.

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ldRestart restarts ts after disconnecting c, its client: a client left
// connected to the old address would spend its server selection timeout
// ending its sessions at cleanup. It returns a new client.
func ldRestart(ts *testServer, c *mongo.Client) *mongo.Client {
	c.Disconnect(ctx)
	ts.restart()
	return ts.client()
}

// ldRaws drains a cursor into the raw documents it returned.
func ldRaws(t *testing.T, cur *mongo.Cursor, err error) [][]byte {
	t.Helper()
	out, err := ldDrain(cur, err)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ldKey identifies a document by its _id's type and bytes.
func ldKey(doc []byte) string {
	v := bsoncore.Document(doc).Lookup("_id")
	return string(rune(v.Type)) + string(v.Data)
}

// ldID returns a document's _id as a value for a filter.
func ldID(doc []byte) bson.RawValue {
	v := bsoncore.Document(doc).Lookup("_id")
	return bson.RawValue{Type: bson.Type(v.Type), Value: v.Data}
}

// ldRoundTripDocs returns the documents of the round-trip test: sizes from
// {_id} alone to the 16 MiB maximum, most between 64 KiB and 2 MiB, with
// _ids of several types.
func ldRoundTripDocs(g *ldGen, short bool) []ldDoc {
	const kib, mib = 1 << 10, 1 << 20
	th := storage.DefaultLargeDocThreshold
	sizes := []int{0, 0, 60, 1000, 20 * kib, th - 1, th, th + 1}
	medium := 8
	if short {
		sizes = []int{0, 1000, th - 1, th, th + 1}
		medium = 4
	}
	all := map[int]bool{len(sizes): true} // the first medium one has every feature
	for range medium {
		sizes = append(sizes, th+g.r.IntN(2*mib-th))
	}
	// Near the maximum: exactly 16 MiB (with every feature), and a little
	// less.
	all[len(sizes)] = true
	sizes = append(sizes, 16*mib)
	if !short {
		sizes = append(sizes, 16*mib-1-g.r.IntN(64*kib))
	}
	docs := make([]ldDoc, len(sizes))
	for i, size := range sizes {
		var id bsoncore.Value
		switch i % 5 {
		case 1:
			id = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, fmt.Sprintf("doc-%d", i))}
		case 2:
			oid := g.oid()
			id = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]}
		case 3:
			id = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendInt32("n", int32(i)).AppendString("s", "x").Build()}
		case 4:
			id = bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, int64(i)<<40)}
		default:
			id = bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))}
		}
		docs[i] = g.documentAll(id, size, all[i])
	}
	return docs
}

// ldCheckDocs checks that coll holds exactly docs, byte for byte: by a full
// scan and, with byID, by a findOne of each _id (but the largest).
func ldCheckDocs(t *testing.T, label string, coll *mongo.Collection, docs []ldDoc, byID bool) {
	t.Helper()
	want := map[string]int{}
	for i, d := range docs {
		want[ldKey(d.raw)] = i
	}
	errs := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if errs++; errs <= 5 {
			t.Errorf(label+": "+format, args...)
		}
	}
	seen := make([]bool, len(docs))
	cur, err := coll.Find(ctx, bson.D{})
	for _, got := range ldRaws(t, cur, err) {
		id := ldID(got)
		i, ok := want[ldKey(got)]
		switch {
		case !ok:
			fail("scan returned a document with unknown _id %v", id)
		case seen[i]:
			fail("scan returned _id %v twice", id)
		default:
			seen[i] = true
			if d := ldDiff(docs[i].raw, got); d != "" {
				fail("scan: document %d (%d bytes; %v) came back as %d bytes: %s", i, len(docs[i].raw), docs[i].features, len(got), d)
			}
		}
	}
	for i, ok := range seen {
		if !ok {
			fail("scan did not return document %d (_id %v)", i, ldID(docs[i].raw))
		}
	}
	if !byID {
		return
	}
	for i, d := range docs {
		if len(d.raw) > 2<<20 {
			continue // the scan read it; a second 16 MiB read costs seconds under -race
		}
		got, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: ldID(d.raw)}}).Raw()
		if err != nil {
			fail("findOne document %d: %v", i, err)
			continue
		}
		if diff := ldDiff(d.raw, got); diff != "" {
			fail("findOne: document %d (%d bytes; %v) came back as %d bytes: %s", i, len(d.raw), d.features, len(got), diff)
		}
	}
	if errs > 5 {
		t.Errorf("%s: %d more failures", label, errs-5)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestLargeDocRoundTrip: random documents of every size up to 16 MiB come
// back byte-exactly after the insert, after a restart (from the on-disk
// form), and at a commit once the working set has moved on; with
// the path index on (default threshold, and a tiny one that puts even small
// documents into trees) and off.
func TestLargeDocRoundTrip(t *testing.T) {
	seed := ldSeed(t)
	docs := ldRoundTripDocs(newLDGen(seed), testing.Short())
	for i, d := range docs {
		t.Logf("document %d: %d bytes: %v", i, len(d.raw), d.features)
	}
	// With the path index off (the reference) one document at the maximum
	// size is enough; with a tiny threshold, the smaller documents.
	configs := []struct {
		name string
		opts storage.Options
		use  func(size int) bool
	}{
		{"default", storage.Options{}, func(int) bool { return true }},
		{"pathIndexOff", storage.Options{LargeDocThreshold: -1}, func(size int) bool { return size <= 2<<20 || size == 16<<20 }},
		{"threshold1KiB", storage.Options{LargeDocThreshold: 1 << 10}, func(size int) bool { return size <= 256<<10 }},
	}
	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			var mine []ldDoc
			for _, d := range docs {
				if cfg.use(len(d.raw)) {
					mine = append(mine, d)
				}
			}
			ts := startServerWith(t, cfg.opts)
			c := ts.client()
			coll := c.Database("rt").Collection("docs")
			for i, d := range mine {
				if _, err := coll.InsertOne(ctx, bson.Raw(d.raw)); err != nil {
					t.Fatalf("insert document %d (%d bytes): %v", i, len(d.raw), err)
				}
			}
			ldCheckDocs(t, "after insert", coll, mine, false)
			commit := mustRun(t, c.Database("rt"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "round trip"}})["commitId"].(string)

			c = ldRestart(ts, c)
			coll = c.Database("rt").Collection("docs")
			ldCheckDocs(t, "after restart", coll, mine, true)
			if _, err := coll.DeleteMany(ctx, bson.D{}); err != nil {
				t.Fatal(err)
			}
			if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
				t.Fatalf("after deleting all: %d documents, %v", n, err)
			}
			ldCheckDocs(t, "at the commit after restart and delete", c.Database("rt@"+commit).Collection("docs"), mine, false)
		})
	}
}

// ldPad returns a nested structure of about size bytes: the padding that
// makes a small document large.
func ldPad(g *ldGen, size int) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("head", strings.Repeat("h", 100))
	rows := bsoncore.NewArrayBuilder()
	n := 0
	for total := 0; total < size-40<<10; n++ {
		tags := bsoncore.NewArrayBuilder()
		for j := range g.r.IntN(6) {
			tags.AppendInt32(int32(n*10 + j))
		}
		row := bsoncore.NewDocumentBuilder().AppendInt32("i", int32(n)).AppendString("s", g.text(50+g.r.IntN(200))).
			AppendArray("t", tags.Build()).Build()
		rows.AppendDocument(row)
		total += len(row) + 8
	}
	b.AppendArray("rows", rows.Build())
	b.AppendDocument("tail", bsoncore.NewDocumentBuilder().AppendInt32("x", 1).AppendString("y", "z").Build())
	b.AppendDocument("rnd", g.fill(2, 32<<10, false))
	return b.Build()
}

// ldSmall is the small document S of the update test.
func ldSmall(id int32) bsoncore.Document {
	doc, err := bson.Marshal(bson.D{
		{Key: "_id", Value: id},
		{Key: "a", Value: int32(1)},
		{Key: "b", Value: "str"},
		{Key: "n", Value: bson.D{{Key: "x", Value: int32(1)}, {Key: "y", Value: bson.D{{Key: "z", Value: int32(2)}}}, {Key: "arr", Value: bson.A{int32(1), int32(2), int32(3)}}}},
		{Key: "arr", Value: bson.A{int32(3), int32(1), int32(2), int32(5), int32(4)}},
		{Key: "docs", Value: bson.A{
			bson.D{{Key: "k", Value: int32(1)}, {Key: "v", Value: "a"}},
			bson.D{{Key: "k", Value: int32(2)}, {Key: "v", Value: "b"}},
			bson.D{{Key: "k", Value: int32(3)}, {Key: "v", Value: "c"}},
		}},
		{Key: "tags", Value: bson.A{"x", "y"}},
		{Key: "num", Value: 10.5},
		{Key: "i64", Value: int64(1) << 40},
		{Key: "bits", Value: int32(0b1010)},
		{Key: "big32", Value: int32(math.MaxInt32)},
		{Key: "when", Value: bson.DateTime(1_700_000_000_000)},
		{Key: "grid", Value: bson.A{bson.A{int32(1), int32(2)}, bson.A{int32(3), int32(4)}}},
		{Key: "s2", Value: "tail"},
	})
	if err != nil {
		panic(err)
	}
	return doc
}

// ldWithField returns doc with the field key: value inserted at position pos
// of its top-level fields (clamped to the end).
func ldWithField(doc bsoncore.Document, pos int, key string, value bsoncore.Document) bsoncore.Document {
	els, _ := doc.Elements()
	pos = min(pos, len(els))
	parts := make([][]byte, 0, len(els)+1)
	for _, el := range els[:pos] {
		parts = append(parts, el)
	}
	parts = append(parts, bsoncore.AppendDocumentElement(nil, key, value))
	for _, el := range els[pos:] {
		parts = append(parts, el)
	}
	return bsoncore.BuildDocument(nil, parts...)
}

// ldWithout returns doc without its top-level field key, and that field's
// value (nil when there is none).
func ldWithout(doc bsoncore.Document, key string) (bsoncore.Document, bsoncore.Value) {
	els, err := doc.Elements()
	if err != nil {
		return doc, bsoncore.Value{}
	}
	var parts [][]byte
	var removed bsoncore.Value
	for _, el := range els {
		if el.Key() == key {
			removed = el.Value()
			continue
		}
		parts = append(parts, el)
	}
	return bsoncore.BuildDocument(nil, parts...), removed
}

// ldMask replaces the value at a dotted path of nested documents with null
// after checking it is a date or timestamp no earlier than since: the
// fields $currentDate sets, which differ between two updates.
func ldMask(t *testing.T, doc bsoncore.Document, path string, since time.Time) bsoncore.Document {
	t.Helper()
	key, rest, nested := strings.Cut(path, ".")
	els, _ := doc.Elements()
	parts := make([][]byte, 0, len(els))
	found := false
	for _, el := range els {
		if el.Key() != key {
			parts = append(parts, el)
			continue
		}
		found = true
		v := el.Value()
		switch {
		case nested && v.Type == bsoncore.TypeEmbeddedDocument:
			parts = append(parts, bsoncore.AppendDocumentElement(nil, key, ldMask(t, v.Document(), rest, since)))
		case nested:
			t.Errorf("$currentDate path %s: %v is no document", path, v.Type)
			parts = append(parts, el)
		case v.Type == bsoncore.TypeDateTime:
			if v.Time().Before(since.Truncate(time.Millisecond)) {
				t.Errorf("$currentDate set %s to %v, before the update at %v", path, v.Time(), since)
			}
			parts = append(parts, bsoncore.AppendNullElement(nil, key))
		case v.Type == bsoncore.TypeTimestamp:
			if secs, _ := v.Timestamp(); int64(secs) < since.Unix() {
				t.Errorf("$currentDate set %s to timestamp %d, before the update at %v", path, secs, since)
			}
			parts = append(parts, bsoncore.AppendNullElement(nil, key))
		default:
			t.Errorf("$currentDate path %s holds %v", path, v.Type)
			parts = append(parts, el)
		}
	}
	if !found {
		t.Errorf("$currentDate path %s is missing", path)
	}
	return bsoncore.BuildDocument(nil, parts...)
}

// ldErrString renders an error for comparison: server errors by code and
// message, nil as "".
func ldErrString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

type ldUpdateCase struct {
	name   string
	filter bson.D // besides _id
	update any    // an update document, a pipeline (bson.A) or, with replace, a replacement
	// largeUpdate, when set, is the update of the large document (an
	// upsert that must create it large).
	largeUpdate  func(pad bsoncore.Document) any
	replace      bool
	upsert       bool
	newID        bool // the filter names an _id that does not exist (an insert by upsert)
	arrayFilters []any
	masks        []string // paths $currentDate sets
	padGone      bool     // the update removes the large document's padding
	wantErr      bool     // the update fails
}

// ldJSON parses relaxed extended JSON (a document or an array) into bson.D
// and bson.A values, keeping field order.
func ldJSON(s string) any {
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(`{"v":`+s+`}`), false, &d); err != nil {
		panic(fmt.Sprintf("%s: %v", s, err))
	}
	return d[0].Value
}

func ldUpdateCases() []ldUpdateCase {
	j := ldJSON
	return []ldUpdateCase{
		{name: "$set existing", update: j(`{"$set": {"a": 2}}`)},
		{name: "$set same value", update: j(`{"$set": {"a": 1, "b": "str"}}`)},
		{name: "$set new fields", update: j(`{"$set": {"zeta": 1, "alpha": "x", "b": "changed"}}`)},
		{name: "$set dotted into nested documents", update: j(`{"$set": {"n.y.z": 3, "n.y.w": 4, "n.new.deep": 5}}`)},
		{name: "$set dotted into arrays", update: j(`{"$set": {"arr.1": 100, "docs.0.v": "A", "arr.7": 7, "grid.1.0": "g", "docs.2.extra": [1]}}`)},
		{name: "$set whole subdocument", update: j(`{"$set": {"n": {"replaced": true}}}`)},
		{name: "$set to values above the threshold", update: j(`{"$set": {"huge": "` + strings.Repeat("x", 100<<10) + `", "n.y.z": "` + strings.Repeat("y", 70<<10) + `"}}`)},
		{name: "$set type change", update: j(`{"$set": {"tags": "no longer an array", "num": {"was": 10.5}}}`)},
		{name: "$unset", update: j(`{"$unset": {"b": "", "n.y.z": "", "arr.0": "", "missing": "", "docs.1.v": ""}}`)},
		{name: "$unset nothing", update: j(`{"$unset": {"missing": ""}}`)},
		{name: "$inc", update: j(`{"$inc": {"a": 5, "n.x": -1, "newcount": 1, "num": 0.5, "i64": {"$numberLong": "1"}, "arr.2": 10}}`)},
		{name: "$inc int32 overflow", update: j(`{"$inc": {"big32": 1}}`)},
		{name: "$mul", update: j(`{"$mul": {"a": 3, "num": 2, "n.y.z": {"$numberLong": "10"}, "absent": 2.5}}`)},
		{name: "$min", update: j(`{"$min": {"a": 0, "num": 100, "when": {"$date": "2020-09-13T12:26:40Z"}, "newmin": 3}}`)},
		{name: "$max", update: j(`{"$max": {"a": 10, "n.x": 0, "newmax": 1, "b": 5}}`)},
		{name: "$rename", update: j(`{"$rename": {"b": "bb", "n.x": "n.xx", "n.y": "moved", "missing": "nothere"}}`)},
		{name: "$currentDate", update: j(`{"$currentDate": {"stamp": true, "n.ts": {"$type": "timestamp"}, "a": {"$type": "date"}}}`), masks: []string{"stamp", "n.ts", "a"}},
		{name: "$setOnInsert on an existing document", upsert: true, update: j(`{"$set": {"a": 9}, "$setOnInsert": {"ins": 1}}`)},
		{name: "$setOnInsert by upsert", newID: true, upsert: true,
			update: j(`{"$set": {"x": 1}, "$setOnInsert": {"created": "yes", "n": {"q": 1}}}`),
			largeUpdate: func(pad bsoncore.Document) any {
				return bson.D{
					{Key: "$set", Value: bson.D{{Key: "x", Value: int32(1)}, {Key: "pad", Value: bson.Raw(pad)}}},
					{Key: "$setOnInsert", Value: j(`{"created": "yes", "n": {"q": 1}}`)},
				}
			}},
		{name: "$push", update: j(`{"$push": {"arr": 6, "n.arr": "s", "newarr": "first"}}`)},
		{name: "$push $each $position", update: j(`{"$push": {"arr": {"$each": [10, 11], "$position": 1}}}`)},
		{name: "$push $each $position negative", update: j(`{"$push": {"tags": {"$each": ["p", "q"], "$position": -1}}}`)},
		{name: "$push $each $sort $slice", update: j(`{"$push": {"arr": {"$each": [0, 9], "$sort": 1, "$slice": -4}}}`)},
		{name: "$push $sort by field", update: j(`{"$push": {"docs": {"$each": [{"k": 0, "v": "z"}], "$sort": {"v": -1}, "$slice": 3}}}`)},
		{name: "$push $slice 0", update: j(`{"$push": {"arr": {"$each": [], "$slice": 0}}}`)},
		{name: "$addToSet $each", update: j(`{"$addToSet": {"tags": {"$each": ["y", "z", "x", "w", "z"]}}}`)},
		{name: "$addToSet existing", update: j(`{"$addToSet": {"tags": "x"}}`)},
		{name: "$addToSet document", update: j(`{"$addToSet": {"docs": {"k": 1, "v": "a"}, "n.arr": 4}}`)},
		{name: "$pop 1", update: j(`{"$pop": {"arr": 1, "grid.0": 1}}`)},
		{name: "$pop -1", update: j(`{"$pop": {"n.arr": -1, "docs": -1}}`)},
		{name: "$pull condition", update: j(`{"$pull": {"arr": {"$gte": 3}, "docs": {"k": {"$in": [1, 3]}}}}`)},
		{name: "$pull value", update: j(`{"$pull": {"tags": "x"}}`)},
		{name: "$pullAll", update: j(`{"$pullAll": {"arr": [1, 5], "tags": ["y"]}}`)},
		{name: "$bit", update: j(`{"$bit": {"bits": {"and": 6}, "n.x": {"or": 4}, "i64": {"xor": {"$numberLong": "255"}}}}`)},
		{name: "positional $", filter: j(`{"docs.k": 2}`).(bson.D), update: j(`{"$set": {"docs.$.v": "B"}, "$inc": {"docs.$.k": 10}}`)},
		{name: "positional $ on scalars", filter: j(`{"arr": 5}`).(bson.D), update: j(`{"$set": {"arr.$": 50}}`)},
		{name: "all positional $[]", update: j(`{"$inc": {"arr.$[]": 1}, "$set": {"docs.$[].seen": true}}`)},
		{name: "filtered positional $[<id>]", update: j(`{"$set": {"docs.$[d].v": "big", "grid.$[].$[c]": 0}}`),
			arrayFilters: []any{j(`{"d.k": {"$gte": 2}}`), j(`{"c": {"$gt": 2}}`)}},
		{name: "replacement", replace: true, padGone: true, update: j(`{"x": 1, "y": [1, 2], "z": {"w": "r"}}`)},
		{name: "replacement by upsert", replace: true, upsert: true, newID: true, update: j(`{"r": "new"}`),
			largeUpdate: func(pad bsoncore.Document) any {
				return bson.D{{Key: "r", Value: "new"}, {Key: "pad", Value: bson.Raw(pad)}}
			}},
		{name: "pipeline", update: j(`[
			{"$set": {"sum": {"$add": ["$a", "$num"]}, "n.copy": "$b"}},
			{"$unset": ["tags", "n.y"]},
			{"$set": {"cnt": {"$size": "$arr"}, "firsts": {"$map": {"input": "$docs", "in": "$$this.v"}}}}]`)},
		{name: "pipeline $replaceWith $$ROOT", update: j(`[{"$replaceWith": {"$mergeObjects": ["$$ROOT", {"extra": 1, "a": "over"}]}}]`)},
		// Errors must be the same errors.
		{name: "$inc on a string", wantErr: true, update: j(`{"$inc": {"b": 1}}`)},
		{name: "$push onto a scalar", wantErr: true, update: j(`{"$push": {"a": 1}}`)},
		{name: "$set through a scalar", wantErr: true, update: j(`{"$set": {"a.b": 1}}`)},
		{name: "$set _id", wantErr: true, update: j(`{"$set": {"_id": -1}}`)},
		{name: "conflicting paths", wantErr: true, update: j(`{"$set": {"n.x": 1}, "$unset": {"n": ""}}`)},
	}
}

// ldUpdateMode is how an update case is applied.
type ldUpdateMode struct {
	name    string
	fam     bool // findOneAndUpdate (findOneAndReplace) instead of updateOne (replaceOne)
	after   bool // findOneAndUpdate returns the new document
	restart bool // the servers restart between the insert and the update
}

// ldUpdateRun is one case in one mode: S and L as inserted, and as they read
// after the update.
type ldUpdateRun struct {
	c       ldUpdateCase
	m       ldUpdateMode
	id      int32
	pad     bsoncore.Document
	padPos  string
	s, l    bsoncore.Document
	sAfter  []byte
	lAfter  []byte
	lUpdate any
}

func (r *ldUpdateRun) label() string {
	return fmt.Sprintf("%s [%s, padding %s]", r.c.name, r.m.name, r.padPos)
}

// ldSmallView returns the large document doc as it should compare with the
// small one: without its padding, which must be there unchanged unless
// padGone, and with the fields $currentDate set masked.
func ldSmallView(t *testing.T, label string, doc []byte, pad bsoncore.Document, padGone bool, masks []string, since time.Time) []byte {
	t.Helper()
	rest, p := ldWithout(doc, "pad")
	switch {
	case padGone && p.Type != 0:
		t.Errorf("%s: the padding survived: %v", label, p.Type)
	case !padGone && (p.Type != bsoncore.TypeEmbeddedDocument || !bytes.Equal(p.Data, pad)):
		t.Errorf("%s: the padding changed (%v, %d bytes, want %d): %s", label, p.Type, len(p.Data), len(pad), ldDiff(pad, p.Data))
	}
	return ldMasked(t, rest, masks, since)
}

func ldMasked(t *testing.T, doc []byte, masks []string, since time.Time) []byte {
	t.Helper()
	for _, m := range masks {
		doc = ldMask(t, doc, m, since)
	}
	return doc
}

// TestLargeDocUpdateOperatorsMatchSmall: every update operator, applied to a
// small document S and to L, S with a large padding field, leaves L equal to
// S plus the unchanged padding, byte for byte; with the same reply, the same
// error, and the same findOneAndUpdate result; with and without a restart
// between the insert and the update (so that the update also starts from the
// stored form of L), and again after a restart.
func TestLargeDocUpdateOperatorsMatchSmall(t *testing.T) {
	seed := ldSeed(t)
	g := newLDGen(seed)
	pads := []bsoncore.Document{ldPad(g, 200<<10+g.r.IntN(200<<10)), ldPad(g, 200<<10+g.r.IntN(200<<10))}
	t.Logf("paddings of %d and %d bytes", len(pads[0]), len(pads[1]))
	modes := []ldUpdateMode{
		{name: "updateOne"},
		{name: "findOneAndUpdate returning the new document", fam: true, after: true},
		{name: "updateOne after a restart", restart: true},
		{name: "findOneAndUpdate returning the old document after a restart", fam: true, restart: true},
	}
	// Each case runs in two modes, one without a restart and one with,
	// taking turns so that every mode sees half the cases; in short mode,
	// in one.
	modesOf := func(ci int) []int {
		if testing.Short() {
			return []int{ci % 4}
		}
		return []int{ci % 2, 2 + ci/2%2}
	}
	t.Run("inside the padding", func(t *testing.T) {
		ldUpdateInsidePadding(t, g, pads[0])
	})
	positions := []struct {
		name string
		pos  int
	}{{"at the end", 100}, {"in the middle", 4}, {"first after _id", 1}}

	small, large := startServer(t), startServer(t)
	scl, lcl := small.client(), large.client()
	connect := func() (*mongo.Collection, *mongo.Collection) {
		return scl.Database("up").Collection("c"), lcl.Database("up").Collection("c")
	}
	restart := func() {
		scl, lcl = ldRestart(small, scl), ldRestart(large, lcl)
	}
	sc, lc := connect()
	var runs []*ldUpdateRun
	var sDocs, lDocs []any
	for ci, c := range ldUpdateCases() {
		for _, mi := range modesOf(ci) {
			m := modes[mi]
			p := positions[(ci+mi)%len(positions)]
			r := &ldUpdateRun{c: c, m: m, id: int32(ci*10 + mi), pad: pads[(ci+mi)%2], padPos: p.name}
			r.s = ldSmall(r.id)
			r.l = ldWithField(r.s, p.pos, "pad", r.pad)
			r.lUpdate = c.update
			if c.largeUpdate != nil {
				r.lUpdate = c.largeUpdate(r.pad)
			}
			runs = append(runs, r)
			sDocs, lDocs = append(sDocs, bson.Raw(r.s)), append(lDocs, bson.Raw(r.l))
		}
	}
	if _, err := sc.InsertMany(ctx, sDocs); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.InsertMany(ctx, lDocs); err != nil {
		t.Fatal(err)
	}

	apply := func(r *ldUpdateRun) {
		t.Helper()
		c, label := r.c, r.label()
		docID := r.id
		if c.newID {
			docID += 100_000
		}
		filter := append(bson.D{{Key: "_id", Value: docID}}, c.filter...)
		since := time.Now()
		if !r.m.fam {
			var sres, lres *mongo.UpdateResult
			var serr, lerr error
			if c.replace {
				o := options.Replace().SetUpsert(c.upsert)
				sres, serr = sc.ReplaceOne(ctx, filter, c.update, o)
				lres, lerr = lc.ReplaceOne(ctx, filter, r.lUpdate, o)
			} else {
				o := options.UpdateOne().SetUpsert(c.upsert)
				if c.arrayFilters != nil {
					o.SetArrayFilters(c.arrayFilters)
				}
				sres, serr = sc.UpdateOne(ctx, filter, c.update, o)
				lres, lerr = lc.UpdateOne(ctx, filter, r.lUpdate, o)
			}
			if (serr != nil) != c.wantErr {
				t.Errorf("%s: the small document's update returned error %v", label, serr)
			}
			if ldErrString(serr) != ldErrString(lerr) {
				t.Errorf("%s: the large document's update failed with %v, the small one's with %v", label, lerr, serr)
			} else if serr == nil && fmt.Sprint(*sres) != fmt.Sprint(*lres) {
				t.Errorf("%s: the large document's update replied %+v, the small one's %+v", label, *lres, *sres)
			}
		} else {
			rd := options.Before
			if r.m.after {
				rd = options.After
			}
			var sres, lres *mongo.SingleResult
			if c.replace {
				o := options.FindOneAndReplace().SetUpsert(c.upsert).SetReturnDocument(rd)
				sres = sc.FindOneAndReplace(ctx, filter, c.update, o)
				lres = lc.FindOneAndReplace(ctx, filter, r.lUpdate, o)
			} else {
				o := options.FindOneAndUpdate().SetUpsert(c.upsert).SetReturnDocument(rd)
				if c.arrayFilters != nil {
					o.SetArrayFilters(c.arrayFilters)
				}
				sres = sc.FindOneAndUpdate(ctx, filter, c.update, o)
				lres = lc.FindOneAndUpdate(ctx, filter, r.lUpdate, o)
			}
			sraw, serr := sres.Raw()
			lraw, lerr := lres.Raw()
			if wantNone := c.newID && !r.m.after; (serr != nil) != (c.wantErr || wantNone) {
				t.Errorf("%s: the small document's findOneAndUpdate returned error %v", label, serr)
			}
			if ldErrString(serr) != ldErrString(lerr) {
				t.Errorf("%s: the large document's findOneAndUpdate failed with %v, the small one's with %v", label, lerr, serr)
			} else if serr == nil {
				var masks []string
				padGone := false
				if r.m.after {
					masks, padGone = c.masks, c.padGone
				}
				sv := ldMasked(t, sraw, masks, since)
				lv := ldSmallView(t, label+": findOneAndUpdate's document", lraw, r.pad, padGone, masks, since)
				if d := ldDiff(sv, lv); d != "" {
					t.Errorf("%s: findOneAndUpdate returned for the large document (without padding) %s\nand for the small one %s\nfirst difference: %s",
						label, bson.Raw(lv), bson.Raw(sv), d)
				}
			}
		}
		sAfter, serr := sc.FindOne(ctx, bson.D{{Key: "_id", Value: docID}}).Raw()
		lAfter, lerr := lc.FindOne(ctx, bson.D{{Key: "_id", Value: docID}}).Raw()
		if ldErrString(serr) != ldErrString(lerr) {
			t.Errorf("%s: reading back the large document: %v, the small one: %v", label, lerr, serr)
			return
		}
		r.sAfter, r.lAfter = sAfter, lAfter
		if serr != nil {
			return
		}
		sv := ldMasked(t, sAfter, c.masks, since)
		lv := ldSmallView(t, label, lAfter, r.pad, c.padGone, c.masks, since)
		if d := ldDiff(sv, lv); d != "" {
			t.Errorf("%s: the large document (without padding) became %s\nthe small one %s\nfirst difference: %s", label, bson.Raw(lv), bson.Raw(sv), d)
		}
	}
	for _, r := range runs {
		if !r.m.restart {
			apply(r)
		}
	}
	restart()
	sc, lc = connect()
	for _, r := range runs {
		if r.m.restart {
			apply(r)
		}
	}
	// The updated documents read the same after another restart.
	restart()
	sc, lc = connect()
	for _, r := range runs {
		docID := r.id
		if r.c.newID {
			docID += 100_000
		}
		for _, side := range []struct {
			name string
			coll *mongo.Collection
			want []byte
		}{{"small", sc, r.sAfter}, {"large", lc, r.lAfter}} {
			got, err := side.coll.FindOne(ctx, bson.D{{Key: "_id", Value: docID}}).Raw()
			if side.want == nil {
				if err != mongo.ErrNoDocuments {
					t.Errorf("%s: after a restart the %s document reads %v, %v; it was not there before", r.label(), side.name, got, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: after a restart the %s document: %v", r.label(), side.name, err)
			} else if d := ldDiff(side.want, got); d != "" {
				t.Errorf("%s: after a restart the updated %s document reads differently: %s", r.label(), side.name, d)
			}
		}
	}
}

// ldUpdateInsidePadding applies a sequence of updates inside the padding of
// a large document (and updates that make it small and large again) on a
// default server and on one with the path index off, and checks that both
// reply the same and hold the same bytes after every step; the servers
// restart halfway.
func ldUpdateInsidePadding(t *testing.T, g *ldGen, pad bsoncore.Document) {
	j := ldJSON
	on, off := startServer(t), startServerWith(t, storage.Options{LargeDocThreshold: -1})
	oncl, offcl := on.client(), off.client()
	doc := ldWithField(ldSmall(1), 4, "pad", pad)
	// A random large document, but for top-level names starting with $,
	// which replacement documents may not have.
	other := g.document(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}, 300<<10).raw
	els, _ := other.Elements()
	for _, el := range els {
		if strings.HasPrefix(el.Key(), "$") {
			other, _ = ldWithout(other, el.Key())
		}
	}
	steps := []struct {
		name         string
		filter       bson.D
		update       any
		replace      bool
		arrayFilters []any
		restart      bool
		wantErr      bool
	}{
		{name: "$set a string in a row", update: j(`{"$set": {"pad.rows.5.s": "x"}}`)},
		{name: "$inc in a row", update: j(`{"$inc": {"pad.rows.10.i": 1000}}`)},
		{name: "$push to a row's array", update: j(`{"$push": {"pad.rows.3.t": 99}}`)},
		{name: "$unset in the tail", update: j(`{"$unset": {"pad.tail.x": ""}}`)},
		{name: "$set a longer head", update: j(`{"$set": {"pad.head": "` + strings.Repeat("H", 5000) + `"}}`)},
		{name: "$rename the head", update: j(`{"$rename": {"pad.head": "pad.head2"}}`)},
		{name: "$pull rows", update: j(`{"$pull": {"pad.rows": {"i": {"$lt": 5}}}}`)},
		{name: "$[<id>] in rows", update: j(`{"$set": {"pad.rows.$[r].s": "filtered"}}`), arrayFilters: []any{j(`{"r.i": {"$in": [7, 70, 700]}}`)}},
		{name: "positional $ in rows", filter: j(`{"pad.rows.i": 40}`).(bson.D), update: j(`{"$set": {"pad.rows.$.s": "pos"}}`), restart: true},
		{name: "$push $position 0 to rows", update: j(`{"$push": {"pad.rows": {"$each": [{"i": -1}], "$position": 0}}}`)},
		{name: "$pop the last row", update: j(`{"$pop": {"pad.rows": 1}}`)},
		{name: "$addToSet $each in a row", update: j(`{"$addToSet": {"pad.rows.2.t": {"$each": [1, 2, 3]}}}`)},
		{name: "$bit, $mul, $min, $max in rows", update: j(`{"$bit": {"pad.rows.20.i": {"or": 1}}, "$mul": {"pad.rows.30.i": 3}, "$min": {"pad.rows.31.i": -5}, "$max": {"pad.rows.32.i": 1000000}}`)},
		{name: "$[] over rows", update: j(`{"$inc": {"pad.rows.$[].i": 1}}`)},
		{name: "$set a whole row", update: j(`{"$set": {"pad.rows.0": {"replaced": true}}}`)},
		{name: "$set in row 700", filter: j(`{"pad.rows.700.i": {"$exists": true}}`).(bson.D), update: j(`{"$set": {"pad.rows.700.s": "late"}, "$inc": {"pad.rows.600.i": 1}}`)},
		{name: "$set past the end of rows", update: j(`{"$set": {"pad.rows.5000": "far"}}`)},
		{name: "pipeline", update: j(`[{"$set": {"pad.tail.y": {"$concat": ["$pad.tail.y", "!"]}, "cnt": {"$size": "$pad.rows"}}}]`)},
		{name: "$inc on a string in a row", update: j(`{"$inc": {"pad.rows.8.s": 1}}`), wantErr: true},
		{name: "$unset the padding (large to small)", update: j(`{"$unset": {"pad": ""}}`)},
		{name: "$set the padding back (small to large)", update: bson.D{{Key: "$set", Value: bson.D{{Key: "pad", Value: bson.Raw(pad)}}}}, restart: true},
		{name: "replacement by a random large document", replace: true, update: bson.Raw(other)},
		{name: "replacement by a small document", replace: true, update: j(`{"small": true}`)},
		{name: "replacement by the large document again", replace: true, update: bson.Raw(doc)},
	}
	for _, cl := range []*mongo.Client{oncl, offcl} {
		if _, err := cl.Database("up").Collection("c").InsertOne(ctx, bson.Raw(doc)); err != nil {
			t.Fatal(err)
		}
	}
	for i, st := range steps {
		if st.restart {
			oncl, offcl = ldRestart(on, oncl), ldRestart(off, offcl)
		}
		label := fmt.Sprintf("step %d, %s", i, st.name)
		filter := append(bson.D{{Key: "_id", Value: int32(1)}}, st.filter...)
		var raws [2][]byte
		var errs [2]error
		for k, cl := range []*mongo.Client{oncl, offcl} {
			coll := cl.Database("up").Collection("c")
			var res *mongo.SingleResult
			if st.replace {
				res = coll.FindOneAndReplace(ctx, filter, st.update, options.FindOneAndReplace().SetReturnDocument(options.After))
			} else {
				o := options.FindOneAndUpdate().SetReturnDocument(options.After)
				if st.arrayFilters != nil {
					o.SetArrayFilters(st.arrayFilters)
				}
				res = coll.FindOneAndUpdate(ctx, filter, st.update, o)
			}
			raws[k], errs[k] = res.Raw()
		}
		if (errs[1] != nil) != st.wantErr {
			t.Fatalf("%s: with the path index off: %v", label, errs[1])
		}
		if ldErrString(errs[0]) != ldErrString(errs[1]) {
			t.Fatalf("%s: with the path index: %v; off: %v", label, errs[0], errs[1])
		}
		if d := ldDiff(raws[1], raws[0]); d != "" {
			t.Fatalf("%s: findOneAndUpdate returned a different document with the path index: %s", label, d)
		}
		for k, cl := range []*mongo.Client{oncl, offcl} {
			got, err := cl.Database("up").Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: int32(1)}}).Raw()
			if err != nil {
				t.Fatalf("%s: %v", label, err)
			}
			raws[k] = got
		}
		if d := ldDiff(raws[1], raws[0]); d != "" {
			t.Fatalf("%s: the document differs with the path index: %s", label, d)
		}
	}
}

// ldQueryDoc returns document i of the query test: fields to filter, sort
// and project on, in random order, and for a large document a payload
// "big" of about bigSize bytes (rows, random content and a string) among
// them; small documents hold only big.meta.
func ldQueryDoc(g *ldGen, i int, bigSize int) bsoncore.Document {
	j := func(s string) bsoncore.Document { // a document or array
		b, err := bson.Marshal(bson.D{{Key: "v", Value: ldJSON(s)}})
		if err != nil {
			panic(err)
		}
		return bsoncore.Document(b).Index(0).Value().Data
	}
	var fields [][]byte
	add := func(el []byte) { fields = append(fields, el) }
	if i%9 != 4 {
		add(bsoncore.AppendStringElement(nil, "name", fmt.Sprintf("n%03d", i)))
	}
	add(bsoncore.AppendInt32Element(nil, "grp", int32(i%4)))
	switch i % 7 {
	case 0:
		add(bsoncore.AppendInt32Element(nil, "score", int32(i%13)))
	case 1:
		add(bsoncore.AppendInt64Element(nil, "score", int64(i%11)))
	case 2:
		add(bsoncore.AppendDoubleElement(nil, "score", float64(i%5)+0.5))
	case 3:
		add(bsoncore.AppendStringElement(nil, "score", fmt.Sprint("s", i%6)))
	case 4:
		add(bsoncore.AppendNullElement(nil, "score"))
	case 5:
		add(bsoncore.AppendArrayElement(nil, "score", j(fmt.Sprintf(`[%d, %d]`, i%8, i%3))))
	}
	add(bsoncore.AppendDocumentElement(nil, "nested", j(fmt.Sprintf(`{"a": {"b": %d, "c": "c%d"}, "arr": [%d, %d]}`, i%7, i, i, i+1))))
	items := bsoncore.NewArrayBuilder()
	for k := range 1 + i%5 {
		items.AppendDocument(j(fmt.Sprintf(`{"k": %d, "v": %d}`, k, i*k%17)))
	}
	add(bsoncore.AppendArrayElement(nil, "items", items.Build()))
	add(bsoncore.AppendArrayElement(nil, "tags", j(fmt.Sprintf(`["t%d", "all"]`, i%3))))
	if i%3 == 0 {
		add(bsoncore.AppendInt32Element(nil, "x.y", 1)) // a dotted name, which paths do not address
	}
	if i%2 == 0 {
		add(bsoncore.AppendDocumentElement(nil, "x", j(fmt.Sprintf(`{"y": %d}`, i%3))))
	}
	add(bsoncore.AppendDocumentElement(nil, "m", j(fmt.Sprintf(`{"0": "zero", "1": %d}`, i))))
	meta := j(fmt.Sprintf(`{"rank": %d, "flag": %t}`, (i*37)%101, i%2 == 0))
	big := bsoncore.NewDocumentBuilder().AppendDocument("meta", meta)
	if bigSize > 0 {
		rows := bsoncore.NewArrayBuilder()
		n := bigSize / 2 / 40
		for r := range n {
			rows.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("i", int32(r)).AppendString("s", g.text(16)).Build())
		}
		big.AppendArray("rows", rows.Build())
		big.AppendDocument("rnd", g.fill(2, bigSize/4, false))
		big.AppendString("blob", g.text(bigSize/4))
	}
	add(bsoncore.AppendDocumentElement(nil, "big", big.Build()))
	add(bsoncore.AppendInt32Element(nil, "after", int32(i)))
	g.r.Shuffle(len(fields), func(a, b int) { fields[a], fields[b] = fields[b], fields[a] })
	return bsoncore.BuildDocument(nil, append([][]byte{bsoncore.AppendInt32Element(nil, "_id", int32(i))}, fields...)...)
}

// ldQuery is one read; it returns the documents (or the reply values) it
// got, raw, for a byte-exact comparison.
type ldQuery struct {
	name string
	run  func(coll *mongo.Collection) ([][]byte, error)
}

// ldDrain reads every document of a cursor (a failed open passes through).
func ldDrain(cur *mongo.Cursor, err error) ([][]byte, error) {
	if err != nil {
		return nil, err
	}
	defer cur.Close(ctx)
	var out [][]byte
	for cur.Next(ctx) {
		out = append(out, bytes.Clone(cur.Current))
	}
	return out, cur.Err()
}

func ldQueries() []ldQuery {
	j := ldJSON
	var qs []ldQuery
	find := func(name, filter string, opts *options.FindOptionsBuilder) {
		qs = append(qs, ldQuery{"find " + name + " " + filter, func(coll *mongo.Collection) ([][]byte, error) {
			cur, err := coll.Find(ctx, j(filter), opts)
			return ldDrain(cur, err)
		}})
	}
	findOpts := func() *options.FindOptionsBuilder { return options.Find() }
	for _, f := range []string{
		`{}`, `{"grp": 1}`, `{"nested.a.b": {"$gte": 3}}`, `{"after": {"$gt": 10}}`, `{"items.k": 2}`,
		`{"items": {"$elemMatch": {"k": 1, "v": {"$gte": 0}}}}`, `{"big.meta.flag": true}`, `{"tags": "t1"}`,
		`{"name": {"$regex": "^n0[0-4]"}}`, `{"score": {"$exists": false}}`, `{"$or": [{"grp": 0}, {"nested.a.b": 6}]}`,
		`{"x.y": 1}`, `{"m.0": "zero", "m.1": {"$lt": 20}}`, `{"score": {"$type": "string"}}`,
		`{"$expr": {"$gt": ["$after", "$big.meta.rank"]}}`, `{"items.1.k": 1}`, `{"big.rows.3.i": 3}`,
		`{"big.meta": {"rank": 0, "flag": true}}`, `{"nested.arr": {"$size": 2}, "grp": {"$ne": 3}}`,
	} {
		find("", f, nil)
	}
	find("batchSize 1", `{}`, findOpts().SetBatchSize(1))
	for _, p := range []string{
		`{"name": 1, "nested.a.b": 1}`, `{"big": 0, "items": 0}`, `{"nested.a": 1, "_id": 0}`,
		`{"items": {"$slice": 2}}`, `{"items": {"$slice": [1, 2]}, "name": 1}`, `{"items": {"$elemMatch": {"k": {"$gte": 2}}}}`,
		`{"big.meta": 1, "after": 1}`, `{"big.rows": {"$slice": -2}, "name": 1}`, `{"x.y": 1, "m": 1}`,
		`{"calc": {"$add": ["$grp", 1]}, "name": 1}`, `{"nested": {"a": {"c": 1}}}`, `{"big.rows.i": 1, "_id": 0}`,
		`{"big.meta.rank": 1, "big.meta": 1}`, `{"score": 1, "tags": {"$slice": 1}}`,
	} {
		find("projection "+p, `{}`, findOpts().SetProjection(j(p)))
	}
	find(`projection {"items.$": 1}`, `{"items.k": 2}`, findOpts().SetProjection(j(`{"items.$": 1}`)))
	find(`projection {"name": 1, "big.meta.rank": 1}`, `{"grp": {"$in": [1, 3]}}`, findOpts().SetProjection(j(`{"name": 1, "big.meta.rank": 1}`)))
	for _, s := range []struct {
		sort, proj         string
		skip, limit, batch int64
	}{
		{sort: `{"score": 1, "_id": 1}`},
		{sort: `{"nested.a.b": -1, "_id": 1}`, limit: 5},
		{sort: `{"after": -1}`, skip: 3, limit: 4},
		{sort: `{"name": 1, "_id": 1}`, skip: 10},
		{sort: `{"big.meta.rank": 1, "_id": 1}`},
		{sort: `{"big.meta.rank": -1}`, proj: `{"name": 1, "big.meta.rank": 1}`},
		{sort: `{"score": -1, "_id": -1}`, limit: 6, batch: 1},
		{sort: `{"tags": 1, "_id": -1}`, proj: `{"big": 0}`},
		{sort: `{"$natural": -1}`},
		{sort: `{"$natural": -1}`, proj: `{"name": 1}`},
		{sort: `{"$natural": 1}`, limit: 3},
	} {
		o := findOpts().SetSort(j(s.sort))
		name := "sort " + s.sort
		if s.proj != "" {
			o.SetProjection(j(s.proj))
			name += " projection " + s.proj
		}
		if s.skip > 0 {
			o.SetSkip(s.skip)
			name += fmt.Sprint(" skip ", s.skip)
		}
		if s.limit > 0 {
			o.SetLimit(s.limit)
			name += fmt.Sprint(" limit ", s.limit)
		}
		if s.batch > 0 {
			o.SetBatchSize(int32(s.batch))
			name += fmt.Sprint(" batchSize ", s.batch)
		}
		find(name, `{}`, o)
	}
	for _, f := range []string{`{}`, `{"grp": 1}`, `{"big.meta.flag": true}`, `{"items.k": 3}`} {
		qs = append(qs, ldQuery{"countDocuments " + f, func(coll *mongo.Collection) ([][]byte, error) {
			n, err := coll.CountDocuments(ctx, j(f))
			return [][]byte{[]byte(fmt.Sprint(n))}, err
		}})
	}
	qs = append(qs, ldQuery{"countDocuments skip limit", func(coll *mongo.Collection) ([][]byte, error) {
		n, err := coll.CountDocuments(ctx, j(`{"grp": {"$ne": 2}}`), options.Count().SetSkip(2).SetLimit(9))
		return [][]byte{[]byte(fmt.Sprint(n))}, err
	}})
	qs = append(qs, ldQuery{"estimatedDocumentCount", func(coll *mongo.Collection) ([][]byte, error) {
		n, err := coll.EstimatedDocumentCount(ctx)
		return [][]byte{[]byte(fmt.Sprint(n))}, err
	}})
	for _, q := range []string{`{}`, `{"nested.a.b": {"$lt": 3}}`, `{"big.meta.flag": false}`} {
		qs = append(qs, ldQuery{"count command " + q, func(coll *mongo.Collection) ([][]byte, error) {
			raw, err := coll.Database().RunCommand(ctx, bson.D{{Key: "count", Value: coll.Name()}, {Key: "query", Value: j(q)}}).Raw()
			if err != nil {
				return nil, err
			}
			return [][]byte{raw.Lookup("n").Value}, nil
		}})
	}
	for _, d := range []struct{ field, filter string }{
		{"grp", `{}`}, {"nested.a.b", `{}`}, {"items.k", `{}`}, {"tags", `{}`}, {"score", `{}`},
		{"big.meta.rank", `{"grp": {"$ne": 0}}`}, {"big.meta", `{"big.meta.flag": true}`}, {"x.y", `{}`}, {"m.0", `{}`},
	} {
		qs = append(qs, ldQuery{"distinct " + d.field + " " + d.filter, func(coll *mongo.Collection) ([][]byte, error) {
			raw, err := coll.Distinct(ctx, d.field, j(d.filter)).Raw()
			return [][]byte{raw}, err
		}})
	}
	for _, p := range []string{
		`[{"$match": {"grp": {"$in": [1, 2]}}}, {"$project": {"name": 1, "nested.a.b": 1}}]`,
		`[{"$group": {"_id": "$grp", "n": {"$sum": 1}, "maxAfter": {"$max": "$after"}, "names": {"$push": "$name"}}}, {"$sort": {"_id": 1}}]`,
		`[{"$sort": {"after": -1, "_id": 1}}, {"$limit": 4}]`,
		`[{"$addFields": {"sz": {"$size": "$items"}, "first": {"$arrayElemAt": ["$items", 0]}}}, {"$project": {"sz": 1, "first": 1, "name": 1}}]`,
		`[{"$match": {}}]`,
		`[{"$project": {"rank": "$big.meta.rank", "flag": "$big.meta.flag"}}]`,
		`[{"$group": {"_id": "$grp", "top": {"$top": {"output": "$name", "sortBy": {"score": -1, "_id": 1}}}}}, {"$sort": {"_id": 1}}]`,
		`[{"$group": {"_id": "$grp", "bottom": {"$bottom": {"output": ["$name", "$after"], "sortBy": {"big.meta.rank": 1}}}}}, {"$sort": {"_id": 1}}]`,
		`[{"$group": {"_id": null, "ranks": {"$topN": {"n": 3, "output": "$big.meta.rank", "sortBy": {"after": -1}}}}}]`,
		`[{"$unwind": "$items"}, {"$group": {"_id": "$items.k", "c": {"$sum": 1}, "v": {"$sum": "$items.v"}}}, {"$sort": {"_id": 1}}]`,
		`[{"$match": {"big.meta.flag": true}}, {"$project": {"rows": {"$slice": ["$big.rows", 2]}, "x.y": 1}}]`,
		`[{"$match": {"grp": 1}}, {"$count": "n"}]`,
		`[{"$sortByCount": "$grp"}, {"$sort": {"count": -1, "_id": 1}}]`,
		`[{"$bucket": {"groupBy": "$after", "boundaries": [0, 10, 20, 1000], "default": "other", "output": {"n": {"$sum": 1}, "ranks": {"$push": "$big.meta.rank"}}}}]`,
		`[{"$project": {"root": "$$ROOT"}}, {"$limit": 3}]`,
		`[{"$project": {"fields": {"$size": {"$objectToArray": "$$ROOT"}}}}]`,
		`[{"$sort": {"score": 1, "_id": 1}}, {"$skip": 2}, {"$limit": 5}, {"$project": {"score": 1, "name": 1}}]`,
		`[{"$match": {"$expr": {"$eq": ["$grp", 2]}}}, {"$project": {"name": 1}}]`,
		`[{"$project": {"n": {"$let": {"vars": {"r": "$big.meta"}, "in": "$$r.rank"}}}}]`,
		`[{"$project": {"s": {"$sortArray": {"input": "$items", "sortBy": {"v": -1, "k": 1}}}}}]`,
		`[{"$project": {"_id": 0, "k": {"$concat": ["$name", "-", {"$toString": "$grp"}]}}}]`,
		`[{"$group": {"_id": {"g": "$grp", "f": "$big.meta.flag"}, "n": {"$sum": 1}, "doc": {"$first": "$$ROOT"}}}, {"$sort": {"_id.g": 1, "_id.f": 1}}, {"$project": {"n": 1, "doc._id": 1}}]`,
		`[{"$match": {"items.k": 1}}, {"$sort": {"big.meta.rank": -1}}, {"$project": {"big.meta": 1, "m": 1}}]`,
		`[{"$replaceRoot": {"newRoot": "$nested"}}]`,
	} {
		qs = append(qs, ldQuery{"aggregate " + p, func(coll *mongo.Collection) ([][]byte, error) {
			cur, err := coll.Aggregate(ctx, j(p), options.Aggregate().SetBatchSize(3))
			return ldDrain(cur, err)
		}})
	}
	return qs
}

// ldResult is what a query returned.
type ldResult struct {
	docs [][]byte
	err  string
}

func ldRunQueries(coll *mongo.Collection, qs []ldQuery) []ldResult {
	out := make([]ldResult, len(qs))
	for i, q := range qs {
		docs, err := q.run(coll)
		out[i] = ldResult{docs, ldErrString(err)}
	}
	return out
}

// ldCompareQueries runs the queries on got and reports where their results
// differ from want, the reference's (the server with the path index off).
func ldCompareQueries(t *testing.T, label string, qs []ldQuery, want []ldResult, got *mongo.Collection) {
	t.Helper()
	for k, q := range qs {
		w := want[k]
		g, gerr := q.run(got)
		switch {
		case w.err != ldErrString(gerr):
			t.Errorf("%s: %s: failed with %v; with the path index off: %v", label, q.name, gerr, w.err)
		case len(w.docs) != len(g):
			t.Errorf("%s: %s: %d results; with the path index off %d", label, q.name, len(g), len(w.docs))
		default:
			for i, wd := range w.docs {
				if !bytes.Equal(wd, g[i]) {
					d := ""
					if len(wd) > 4 && int(int32(uint32(wd[0])|uint32(wd[1])<<8|uint32(wd[2])<<16|uint32(wd[3])<<24)) == len(wd) {
						d = ldDiff(wd, g[i])
					}
					t.Errorf("%s: %s: result %d of %d differs from the path index off (%d bytes, want %d): %s", label, q.name, i, len(w.docs), len(g[i]), len(wd), d)
					break
				}
			}
		}
	}
}

// TestLargeDocQueries: on a collection of small and large documents, finds
// (filters, projections, sorts with skip and limit), counts, distinct and
// aggregations return byte for byte what they return with the path index
// off, after a restart (from the stored trees) and at a commit.
func TestLargeDocQueries(t *testing.T) {
	seed := ldSeed(t)
	g := newLDGen(seed)
	nSmall, bigSizes := 40, []int{1200 << 10, 1600 << 10, 1100 << 10, 100 << 10, 300 << 10, 70 << 10}
	if testing.Short() {
		nSmall, bigSizes = 16, []int{1100 << 10, 1300 << 10, 200 << 10}
	}
	var docs []any
	var raws [][]byte
	for i := range nSmall + len(bigSizes) {
		size := 0
		if k := i - nSmall; k >= 0 {
			size = bigSizes[k]
		}
		d := ldQueryDoc(g, i, size)
		docs, raws = append(docs, bson.Raw(d)), append(raws, d)
	}
	// Interleave large documents with small ones in _id order.
	g.r.Shuffle(len(docs), func(a, b int) { docs[a], docs[b] = docs[b], docs[a] })
	// And, in a collection of their own, random large documents of the
	// generator (with thousands of fields, long arrays, every type), with
	// paths to some of their fields to query.
	var random []any
	var paths []string
	for k, size := range []int{300 << 10, 700 << 10} {
		d := g.document(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(1000+k))}, size).raw
		random = append(random, bson.Raw(d))
		paths = append(paths, ldSomePaths(g, d, 10)...)
	}
	// And one with more than 511 fields at the top level and in a
	// subdocument: partial reads of it seek past three-byte element indexes
	// (storage/doctree's readIndex once decoded 512 and up wrongly, and such
	// reads looped or overflowed the stack).
	wide := bsoncore.NewDocumentBuilder().AppendInt32("_id", 2000)
	for i := range 600 {
		wide.AppendInt32(fmt.Sprint("f", i), int32(i))
	}
	sub := bsoncore.NewDocumentBuilder()
	for i := range 1000 {
		sub.AppendDocument(fmt.Sprint("k", i), bsoncore.NewDocumentBuilder().AppendInt32("x", int32(i)).AppendString("s", g.text(60)).Build())
	}
	wide.AppendDocument("wide", sub.Build())
	wide.AppendInt32("grp", 1)
	random = append(random, bson.Raw(wide.Build()))
	paths = append(paths, "f550", "f599", "wide.k900.x", "wide.k999", "grp")
	randomQueries := ldPathQueries(paths)
	t.Logf("%d documents; large ones of %v bytes", len(docs), bigSizes)
	on, off := startServer(t), startServerWith(t, storage.Options{LargeDocThreshold: -1})
	oncl, offcl := on.client(), off.client()
	for _, cl := range []*mongo.Client{oncl, offcl} {
		if _, err := cl.Database("q").Collection("c").InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Database("q").Collection("r").InsertMany(ctx, random); err != nil {
			t.Fatal(err)
		}
	}
	// The reference holds the documents as inserted.
	all, err := offcl.Database("q").Collection("c").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	got := ldRaws(t, all, err)
	if len(got) != len(docs) {
		t.Fatalf("the reference holds %d documents, want %d", len(got), len(docs))
	}
	for i, r := range raws {
		if d := ldDiff(r, got[i]); d != "" {
			t.Fatalf("the reference changed document %d: %s", i, d)
		}
	}

	// The reference's results, once: it does not change.
	// On the random documents, the finds with plain filters (the first 20
	// queries) and queries on their own paths.
	qs := ldQueries()
	rqs := append(qs[:20:20], randomQueries...)
	want := ldRunQueries(offcl.Database("q").Collection("c"), qs)
	var rwant []ldResult
	compare := func(label, db string) {
		t.Helper()
		ldCompareQueries(t, label, qs, want, oncl.Database(db).Collection("c"))
		t.Run(label+", random documents", func(t *testing.T) {
			if rwant == nil {
				rwant = ldRunQueries(offcl.Database("q").Collection("r"), rqs)
			}
			ldCompareQueries(t, label+", random documents", rqs, rwant, oncl.Database(db).Collection("r"))
		})
	}
	// Before a checkpoint documents are read whole, so the comparisons start
	// after a restart.
	commit := mustRun(t, oncl.Database("q"), bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "queries"}})["commitId"].(string)
	oncl = ldRestart(on, oncl)
	compare("after restart", "q")
	if !testing.Short() {
		compare("at the commit", "q@"+commit)
	}
}

// ldSomePaths returns up to n dotted paths to fields of doc, top-level and
// one level down, whose names a path can address (no dots, no leading $).
func ldSomePaths(g *ldGen, doc bsoncore.Document, n int) []string {
	plain := func(k string) bool { return k != "" && !strings.Contains(k, ".") && !strings.HasPrefix(k, "$") }
	var all []string
	els, _ := doc.Elements()
	for _, el := range els[1:] {
		if !plain(el.Key()) {
			continue
		}
		all = append(all, el.Key())
		if sub, ok := el.Value().DocumentOK(); ok && el.Value().Type == bsoncore.TypeEmbeddedDocument {
			subs, _ := sub.Elements()
			for _, se := range subs {
				if plain(se.Key()) {
					all = append(all, el.Key()+"."+se.Key())
				}
			}
		}
	}
	g.r.Shuffle(len(all), func(a, b int) { all[a], all[b] = all[b], all[a] })
	return all[:min(n, len(all))]
}

// ldPathQueries returns finds and aggregations over the given paths:
// filters, projections and sorts on each, and a projection of many at once.
func ldPathQueries(paths []string) []ldQuery {
	var qs []ldQuery
	many := bson.D{}
	for i, p := range paths {
		many = append(many, bson.E{Key: p, Value: 1})
		qs = append(qs, ldQuery{"find on path " + p, func(coll *mongo.Collection) ([][]byte, error) {
			return ldDrain(coll.Find(ctx, bson.D{{Key: p, Value: bson.D{{Key: "$exists", Value: true}}}},
				options.Find().SetProjection(bson.D{{Key: p, Value: 1}})))
		}})
		if i%5 == 0 {
			qs = append(qs, ldQuery{"sort on path " + p, func(coll *mongo.Collection) ([][]byte, error) {
				return ldDrain(coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: p, Value: -1}, {Key: "_id", Value: 1}})))
			}}, ldQuery{"aggregate on path " + p, func(coll *mongo.Collection) ([][]byte, error) {
				return ldDrain(coll.Aggregate(ctx, bson.A{
					bson.D{{Key: "$match", Value: bson.D{{Key: p, Value: bson.D{{Key: "$exists", Value: true}}}}}},
					bson.D{{Key: "$project", Value: bson.D{{Key: "v", Value: "$" + p}, {Key: "t", Value: bson.D{{Key: "$type", Value: "$" + p}}}}}},
				}))
			}})
		}
	}
	qs = append(qs, ldQuery{fmt.Sprintf("find projecting %d paths", len(many)), func(coll *mongo.Collection) ([][]byte, error) {
		return ldDrain(coll.Find(ctx, bson.D{}, options.Find().SetProjection(many)))
	}})
	return qs
}
