package storage

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/fuzzbson"
	"github.com/dumbodb/dumbodb/storage/doctree"

	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzDecodeRecord checks that recovery's decoding of a log payload never
// panics, and that what it accepts encodes back to a payload that decodes
// the same.
func FuzzDecodeRecord(f *testing.F) {
	doc := fuzzbson.D("_id", 1, "a", "x")
	raw, _ := bson.Marshal(doc)
	f.Add(encodeRecord(nil, "main", []walOp{
		{op: opPut, coll: "c", key: []byte{1, 2}, value: raw},
		{op: opDelete, coll: "c", key: []byte{3}},
		{op: opCreate, coll: "d", value: raw},
		{op: opRename, coll: "d", to: "e"},
		{op: opDrop, coll: "e"},
	}, nil, 7<<32|1))
	f.Add(encodeRecord(nil, "feature", nil, nil, 0))
	f.Add(encodeRecord(nil, "main", []walOp{{op: opPut, coll: "c", key: []byte{1}, value: raw}},
		&retryLog{txn: 3, at: time.UnixMilli(1700000000000), stmts: []int32{0, 4}, outcomes: []bsoncore.Document{bsoncore.NewDocumentBuilder().Build(), raw}}, 0))
	f.Fuzz(func(t *testing.T, payload []byte) {
		rec, err := decodeRecord(payload)
		if err != nil {
			return
		}
		again, err := decodeRecord(encodeRecord(nil, rec.branch, rec.ops, rec.retry, rec.at))
		if err != nil || again.branch != rec.branch || !sameOps(again.ops, rec.ops) || !sameRetry(again.retry, rec.retry) {
			t.Fatalf("re-encoded record decodes to %+v (%v), not %+v", again, err, rec)
		}
	})
}

// sameRetry compares two records' retry outcomes.
func sameRetry(a, b *retryLog) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.session != b.session || a.txn != b.txn || !a.at.Equal(b.at) || len(a.stmts) != len(b.stmts) {
		return false
	}
	for i := range a.stmts {
		if a.stmts[i] != b.stmts[i] || !bytes.Equal(a.outcomes[i], b.outcomes[i]) {
			return false
		}
	}
	return true
}

// sameOps compares what encodeRecord writes of each op, which is all
// that a re-encoded record can give back.
func sameOps(a, b []walOp) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		y := b[i]
		same := x.op == y.op && x.coll == y.coll
		switch x.op {
		case opPut:
			same = same && bytes.Equal(x.key, y.key) && bytes.Equal(x.value, y.value)
		case opDelete:
			same = same && bytes.Equal(x.key, y.key)
		case opCreate, opMeta:
			same = same && bytes.Equal(x.value, y.value)
		case opRename:
			same = same && x.to == y.to
		}
		if !same {
			return false
		}
	}
	return true
}

// FuzzDocumentValue checks that a document stored as a map value (inline,
// as a blob, or as a doctree) reads back unchanged.
func FuzzDocumentValue(f *testing.F) {
	f.Add(fuzzbson.Encode(fuzzbson.D("_id", 1, "a", bson.A{"x", 2.5})), uint16(0))
	f.Add(fuzzbson.Encode(fuzzbson.D("_id", "k", "b", bson.Binary{Data: make([]byte, 200)})), uint16(3000))
	ctx := context.Background()
	ns := tree.NewTestNodeStore()
	writers := []*docWriter{nil, {threshold: 64, trees: doctree.NewWriter(ns)}}
	f.Fuzz(func(t *testing.T, data []byte, pad uint16) {
		doc := padded(fuzzbson.Document(data), pad)
		for _, w := range writers {
			v, err := docValueTuple(ctx, ns, doc, w)
			if err != nil {
				t.Fatal(err)
			}
			got, err := valueBytes(ctx, ns, v)
			if err != nil || !bytes.Equal(got, doc) {
				t.Fatalf("stored %d bytes (doctree writer %v), read back %d: %v", len(doc), w != nil, len(got), err)
			}
		}
	})
}

// padded adds a binary field of pad bytes, to cross the inline limit
// and doctree segment sizes with small inputs.
func padded(doc []byte, pad uint16) []byte {
	d := bson.Raw(doc)
	out, _ := bson.Marshal(bson.D{{Key: "d", Value: d}, {Key: "p", Value: bson.Binary{Data: make([]byte, pad)}}})
	return out
}
