package storage

import (
	"fmt"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The change log's entries as bytes (docs/format/changes.md).

// appendChangeEntry appends an entry's payload (docs/format/changes.md).
func appendChangeEntry(dst []byte, e ChangeEntry) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendTimestampElement(dst, "t", uint32(e.At>>32), uint32(e.At))
	dst = bsoncore.AppendDateTimeElement(dst, "w", e.Wall.UnixMilli())
	dst = bsoncore.AppendStringElement(dst, "db", e.DB)
	dst = bsoncore.AppendStringElement(dst, "b", e.Branch)
	dst = bsoncore.AppendInt64Element(dst, "l", int64(e.LSN))
	if e.Txn != nil {
		var x int32
		x, dst = bsoncore.AppendDocumentElementStart(dst, "x")
		dst = bsoncore.AppendBinaryElement(dst, "id", 4, e.Txn.Session.ID[:])
		dst = bsoncore.AppendBinaryElement(dst, "u", 0, e.Txn.Session.UID[:])
		dst = bsoncore.AppendInt64Element(dst, "n", e.Txn.Number)
		dst, _ = bsoncore.AppendDocumentEnd(dst, x)
	}
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "e")
	for i, ev := range e.Events {
		dst = appendChangeEvent(dst, strconv.Itoa(i), ev)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func appendChangeEvent(dst []byte, key string, ev ChangeEvent) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendStringElement(dst, "o", ev.Op)
	if ev.Coll != "" {
		dst = bsoncore.AppendStringElement(dst, "c", ev.Coll)
		dst = bsoncore.AppendBinaryElement(dst, "ui", 4, ev.UUID[:])
	}
	for _, f := range [...]struct {
		key string
		doc bsoncore.Document
	}{{"k", ev.Key}, {"d", ev.Doc}, {"p", ev.Pre}, {"u", ev.Update}, {"i", ev.Desc}, {"sb", ev.Before}} {
		if f.doc != nil {
			dst = bsoncore.AppendDocumentElement(dst, f.key, f.doc)
		}
	}
	if ev.To != "" {
		dst = bsoncore.AppendStringElement(dst, "to", ev.To)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func decodeChangeEntry(seq uint64, payload []byte) (ChangeEntry, error) {
	doc := bsoncore.Document(payload)
	if doc.Validate() != nil {
		return ChangeEntry{}, fmt.Errorf("%w %d", errBadChangeEntry, seq)
	}
	e := ChangeEntry{Seq: seq}
	t, i, _ := doc.Lookup("t").TimestampOK()
	e.At = uint64(t)<<32 | uint64(i)
	e.Wall = time.UnixMilli(doc.Lookup("w").DateTime())
	e.DB, _ = doc.Lookup("db").StringValueOK()
	e.Branch, _ = doc.Lookup("b").StringValueOK()
	lsn, _ := doc.Lookup("l").Int64OK()
	e.LSN = uint64(lsn)
	if x, ok := doc.Lookup("x").DocumentOK(); ok {
		e.Txn = &ChangeTxn{}
		_, id, _ := x.Lookup("id").BinaryOK()
		_, uid, _ := x.Lookup("u").BinaryOK()
		copy(e.Txn.Session.ID[:], id)
		copy(e.Txn.Session.UID[:], uid)
		e.Txn.Number, _ = x.Lookup("n").Int64OK()
	}
	arr, _ := doc.Lookup("e").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return ChangeEntry{}, fmt.Errorf("%w %d", errBadChangeEntry, seq)
		}
		e.Events = append(e.Events, decodeChangeEvent(d))
	}
	return e, nil
}

func decodeChangeEvent(d bsoncore.Document) ChangeEvent {
	ev := ChangeEvent{}
	ev.Op, _ = d.Lookup("o").StringValueOK()
	ev.Coll, _ = d.Lookup("c").StringValueOK()
	ev.To, _ = d.Lookup("to").StringValueOK()
	if _, u, ok := d.Lookup("ui").BinaryOK(); ok {
		copy(ev.UUID[:], u)
	}
	ev.Key, _ = d.Lookup("k").DocumentOK()
	ev.Doc, _ = d.Lookup("d").DocumentOK()
	ev.Pre, _ = d.Lookup("p").DocumentOK()
	ev.Update, _ = d.Lookup("u").DocumentOK()
	ev.Desc, _ = d.Lookup("i").DocumentOK()
	ev.Before, _ = d.Lookup("sb").DocumentOK()
	return ev
}
