package wire

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

var allCompressors = []CompressorID{CompressorNoop, CompressorSnappy, CompressorZlib, CompressorZstd}

// mustDoc builds a document from alternating keys and values with the
// official bson package, so tests don't depend on this package's encoding.
func mustDoc(tb testing.TB, kv ...any) bsoncore.Document {
	tb.Helper()
	d := bson.D{}
	for i := 0; i < len(kv); i += 2 {
		d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	b, err := bson.Marshal(d)
	if err != nil {
		tb.Fatalf("marshal %v: %v", d, err)
	}
	return b
}

// insertMsg is a typical driver insert: the command in the body, the
// documents in a "documents" sequence.
func insertMsg(tb testing.TB, n int) *Msg {
	tb.Helper()
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i] = mustDoc(tb, "_id", int32(i), "name", fmt.Sprintf("item %d", i), "tags", bson.A{"a", "b"})
	}
	return &Msg{
		Body:      mustDoc(tb, "insert", "things", "ordered", true, "$db", "test"),
		Sequences: []Sequence{{Identifier: "documents", Documents: docs}},
	}
}

// sampleMessages covers every message type and the optional parts of each.
func sampleMessages(tb testing.TB) map[string]Message {
	tb.Helper()
	return map[string]Message{
		"msg body only":      &Msg{Body: mustDoc(tb, "ping", int32(1), "$db", "admin")},
		"msg flags":          &Msg{Flags: FlagMoreToCome | FlagExhaustAllowed, Body: mustDoc(tb, "getMore", int64(7))},
		"msg checksum":       &Msg{Flags: FlagChecksumPresent, Body: mustDoc(tb, "ping", int32(1))},
		"msg sequence":       insertMsg(tb, 3),
		"msg checksum + seq": &Msg{Flags: FlagChecksumPresent, Body: insertMsg(tb, 2).Body, Sequences: insertMsg(tb, 2).Sequences},
		"msg two sequences": &Msg{
			Body: mustDoc(tb, "update", "things", "$db", "test"),
			Sequences: []Sequence{
				{Identifier: "updates", Documents: []bsoncore.Document{mustDoc(tb, "q", bson.D{}, "u", bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})}},
				{Identifier: "empty", Documents: []bsoncore.Document{}},
			},
		},
		"query": &Query{
			Flags: 4, FullCollectionName: "admin.$cmd", NumberToSkip: 0, NumberToReturn: -1,
			Query: mustDoc(tb, "isMaster", int32(1), "client", bson.D{{Key: "driver", Value: "test"}}),
		},
		"query selector": &Query{
			FullCollectionName: "db.c", NumberToSkip: 3, NumberToReturn: 10,
			Query: mustDoc(tb, "a", int32(1)), ReturnFieldsSelector: mustDoc(tb, "a", int32(1), "_id", int32(0)),
		},
		"reply": &Reply{ResponseFlags: 8, CursorID: 0, StartingFrom: 0, Documents: []bsoncore.Document{mustDoc(tb, "ismaster", true, "ok", 1.0)}},
		"reply many": &Reply{CursorID: 1 << 40, StartingFrom: 5, Documents: []bsoncore.Document{
			mustDoc(tb, "a", int32(1)), mustDoc(tb, "b", "two"), mustDoc(tb),
		}},
		"reply empty": &Reply{ResponseFlags: 1, Documents: []bsoncore.Document{}},
	}
}

// encode writes msg with Write and returns the bytes.
func encode(tb testing.TB, reqID, respTo int32, msg Message, comp CompressorID) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, reqID, respTo, msg, comp); err != nil {
		tb.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// rawMessage frames body parts with a correct header, for hand-made input.
func rawMessage(op OpCode, parts ...[]byte) []byte {
	b := make([]byte, headerLen)
	for _, p := range parts {
		b = append(b, p...)
	}
	le.PutUint32(b, uint32(len(b)))
	le.PutUint32(b[4:], 99)
	le.PutUint32(b[12:], uint32(op))
	return b
}

func u32(v uint32) []byte { return le.AppendUint32(nil, v) }

// compressedMessage wraps payload in OP_COMPRESSED as given, right or wrong.
func compressedMessage(original OpCode, declared int32, comp CompressorID, payload []byte) []byte {
	return rawMessage(OpCompressed, u32(uint32(original)), u32(uint32(declared)), []byte{byte(comp)}, payload)
}
