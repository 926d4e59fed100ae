package storage

import (
	"context"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Log operation names (docs/format/wal.md).
const (
	opPut    = "put"
	opPatch  = "patch"  // a put written as splices of the document it replaces (walpatch.go)
	opFields = "fields" // an update of a large document's top-level fields (walfields.go)
	opDelete = "del"
	opCreate = "create"
	opDrop   = "drop"
	opRename = "rename"
	opMeta   = "meta" // replace a catalog entry (index specs)
)

// walOp is one logged change.
type walOp struct {
	op    string
	coll  string
	key   []byte // put, del
	value []byte // put: the document; create: the catalog entry
	to    string // rename
	// update: a put an update operator made (its change event is an
	// update, not a replace).
	update bool
	// base is the document a put replaces (nil: it inserts), from which
	// the log may write it as a patch. Never decoded: replay reads it.
	base []byte
	// patch, baseLen and sum are a patch op's splices, base length and the
	// CRC-32C of the document it makes; for a fields op, its element
	// splices, base length and the CRC-32C of the elements they remove.
	patch   []byte
	baseLen int
	sum     uint32
}

// encodeRecord is the log payload of one transaction on branch, with the
// outcomes of a retryable write (nil: none).
// at is the write's cluster time, for its change events (0: none). It is
// encoded into dst's room (nil: a new buffer); dst's bytes are overwritten.
func encodeRecord(dst []byte, branch string, ops []walOp, retry *retryLog, at uint64) []byte {
	return appendMarkedRecord(dst, branch, ops, retry, at, "", txnID{})
}

// Marks of a transaction over several databases (docs/format/wal.md).
const (
	markPrepared = "x"
	markCommit   = "cx"
	markAbort    = "ax"
)

// encodeMarkedRecord is encodeRecord with a mark naming a transaction
// over several databases ("": none).
func encodeMarkedRecord(branch string, ops []walOp, retry *retryLog, at uint64, mark string, id txnID) []byte {
	return appendMarkedRecord(nil, branch, ops, retry, at, mark, id)
}

// appendMarkedRecord is encodeMarkedRecord into dst's room (its bytes
// are overwritten).
func appendMarkedRecord(dst []byte, branch string, ops []walOp, retry *retryLog, at uint64, mark string, id txnID) []byte {
	// Patches first, so that the buffer is sized for what is written: an
	// 8 MB document logged as a patch must not cost an 8 MB buffer.
	var patches [][]byte // nil: no op is a patch
	size := 64
	for i, o := range ops {
		body := len(o.value) + len(o.patch)
		if o.op == opPut && o.base != nil {
			if p := encodePatch(o.base, o.value); p != nil {
				if patches == nil {
					patches = make([][]byte, len(ops))
				}
				patches[i], body = p, len(p)+32
			}
		}
		size += len(o.key) + body + len(o.coll) + 48
	}
	dst = slices.Grow(dst[:0], size)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, "b", branch)
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "ops")
	for i, o := range ops {
		var patch []byte
		if patches != nil {
			patch = patches[i]
		}
		dst = appendOp(dst, i, o, patch)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	if retry != nil {
		dst = appendRetryLog(dst, "r", retry)
	}
	if mark != "" {
		dst = bsoncore.AppendBinaryElement(dst, mark, 0, id[:])
	}
	if at != 0 {
		dst = bsoncore.AppendTimestampElement(dst, "t", uint32(at>>32), uint32(at))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendOp appends one op; patch, when set, is a put's document as a
// patch of the one it replaces.
func appendOp(dst []byte, i int, o walOp, patch []byte) []byte {
	// The element's key is its index, appended as digits: a string for
	// each of a batch's ops was most of its record's allocations.
	dst = append(dst, byte(bsoncore.TypeEmbeddedDocument))
	dst = append(strconv.AppendInt(dst, int64(i), 10), 0)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	if patch != nil {
		dst = bsoncore.AppendStringElement(dst, "o", opPatch)
	} else {
		dst = bsoncore.AppendStringElement(dst, "o", o.op)
	}
	dst = bsoncore.AppendStringElement(dst, "c", o.coll)
	switch o.op {
	case opPut:
		dst = bsoncore.AppendBinaryElement(dst, "k", 0, o.key)
		if patch != nil {
			dst = appendPatch(dst, o, patch)
		} else {
			dst = bsoncore.AppendDocumentElement(dst, "d", o.value)
		}
		if o.update {
			dst = bsoncore.AppendBooleanElement(dst, "u", true)
		}
	case opFields:
		dst = bsoncore.AppendBinaryElement(dst, "k", 0, o.key)
		dst = bsoncore.AppendInt64Element(dst, "n", int64(o.baseLen))
		dst = bsoncore.AppendInt64Element(dst, "x", int64(o.sum))
		dst = bsoncore.AppendBinaryElement(dst, "s", 0, o.patch)
		dst = bsoncore.AppendBooleanElement(dst, "u", true)
	case opDelete:
		dst = bsoncore.AppendBinaryElement(dst, "k", 0, o.key)
	case opCreate, opMeta:
		dst = bsoncore.AppendDocumentElement(dst, "info", o.value)
	case opRename:
		dst = bsoncore.AppendStringElement(dst, "to", o.to)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// appendPatch writes the fields of a patch op after its key.
func appendPatch(dst []byte, o walOp, patch []byte) []byte {
	dst = bsoncore.AppendInt64Element(dst, "n", int64(len(o.base)))
	dst = bsoncore.AppendInt64Element(dst, "x", int64(crc32.Checksum(o.value, castagnoli)))
	return bsoncore.AppendBinaryElement(dst, "s", 0, patch)
}

// logRecord is a decoded log payload.
type logRecord struct {
	branch string
	ops    []walOp
	retry  *retryLog // nil: not a retryable write
	mark   string    // markPrepared, markCommit, markAbort or ""
	txn    txnID     // the transaction a mark names
	at     uint64    // the write's cluster time (0: not recorded)
}

// decodeRecord reads a log payload.
func decodeRecord(payload []byte) (logRecord, error) {
	doc := bsoncore.Document(payload)
	if err := doc.Validate(); err != nil {
		return logRecord{}, fmt.Errorf("log record: %w", err)
	}
	branch, ok := doc.Lookup("b").StringValueOK()
	arr, ok2 := doc.Lookup("ops").ArrayOK()
	if !ok || !ok2 {
		return logRecord{}, fmt.Errorf("log record without branch or ops")
	}
	ops, err := decodeOps(arr)
	if err != nil {
		return logRecord{}, err
	}
	rec := logRecord{branch: branch, ops: ops}
	if t, i, ok := doc.Lookup("t").TimestampOK(); ok {
		rec.at = uint64(t)<<32 | uint64(i)
	}
	if r, err := doc.LookupErr("r"); err == nil {
		if rec.retry, err = decodeRetryLog(r); err != nil {
			return logRecord{}, fmt.Errorf("log record: %w", err)
		}
	}
	for _, mark := range []string{markPrepared, markCommit, markAbort} {
		if _, id, ok := doc.Lookup(mark).BinaryOK(); ok {
			if len(id) != len(txnID{}) {
				return logRecord{}, fmt.Errorf("log record: a %s mark of %d bytes", mark, len(id))
			}
			rec.mark, rec.txn = mark, txnID(id)
		}
	}
	return rec, nil
}

func decodeOps(arr bsoncore.Array) ([]walOp, error) {
	vals, err := arr.Values()
	if err != nil {
		return nil, err
	}
	ops := make([]walOp, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("log op is not a document")
		}
		o := walOp{}
		o.op, _ = d.Lookup("o").StringValueOK()
		o.coll, _ = d.Lookup("c").StringValueOK()
		o.to, _ = d.Lookup("to").StringValueOK()
		o.update, _ = d.Lookup("u").BooleanOK()
		if _, k, ok := d.Lookup("k").BinaryOK(); ok {
			o.key = k
		}
		if v, ok := d.Lookup("d").DocumentOK(); ok {
			o.value = v
		}
		if v, ok := d.Lookup("info").DocumentOK(); ok {
			o.value = v
		}
		if o.op == opPatch || o.op == opFields {
			if err := decodePatchFields(d, &o); err != nil {
				return nil, err
			}
		}
		ops = append(ops, o)
	}
	return ops, nil
}

func decodePatchFields(d bsoncore.Document, o *walOp) error {
	n, ok1 := d.Lookup("n").Int64OK()
	x, ok2 := d.Lookup("x").Int64OK()
	_, s, ok3 := d.Lookup("s").BinaryOK()
	if !ok1 || !ok2 || !ok3 || n < 0 || x < 0 || x > 0xFFFFFFFF {
		return fmt.Errorf("log patch without its length, checksum or splices")
	}
	o.baseLen, o.sum, o.patch = int(n), uint32(x), s
	return nil
}

// redo applies logged operations to a transaction during recovery.
func (tx *Tx) redo(ctx context.Context, ops []walOp) error {
	for _, o := range ops {
		var err error
		switch o.op {
		case opPut, opPatch, opFields:
			err = tx.redoPut(ctx, o)
		case opDelete:
			err = tx.deleteKey(ctx, o.coll, append([]byte(nil), o.key...))
		case opCreate:
			var info CollectionInfo
			if info, err = decodeCollectionInfo(o.value); err == nil {
				err = tx.createCollection(ctx, info)
			}
		case opDrop:
			err = tx.dropCollection(o.coll)
		case opRename:
			err = tx.renameCollection(o.coll, o.to, true)
		case opMeta:
			err = tx.redoMeta(ctx, o)
		default:
			err = fmt.Errorf("unknown log op %q", o.op)
		}
		if err != nil {
			return fmt.Errorf("redo %s on %q: %w", o.op, o.coll, err)
		}
	}
	return nil
}

func (tx *Tx) redoPut(ctx context.Context, o walOp) error {
	c, err := tx.mutable(o.coll)
	if err != nil {
		return err
	}
	old, exists, err := lookup(ctx, tx.ns, c.base, c.edits, o.key)
	if err != nil {
		return err
	}
	value := append([]byte(nil), o.value...)
	if o.op == opPatch || o.op == opFields {
		if !exists {
			return fmt.Errorf("%w: no document to patch", errPatchMismatch)
		}
		apply := applyPatch
		if o.op == opFields {
			apply = applyFieldSplices
		}
		if value, err = apply(old, o.patch, o.baseLen, o.sum); err != nil {
			return err
		}
		o = walOp{op: opPut, coll: o.coll, key: o.key, update: o.update}
	}
	o.base, o.value = oldIf(old, exists), value
	if err := c.writeIndexes(ctx, tx.ns, o.key, old, value); err != nil {
		return err
	}
	if err := c.noteCapped(ctx, tx.ns, o.key, oldIf(old, exists), value); err != nil {
		return err
	}
	c.setEdit(&edit{key: append([]byte(nil), o.key...), value: value}, exists)
	tx.ops = append(tx.ops, o)
	tx.noteDoc(c, o.key, oldIf(old, exists), value, o.update)
	return nil
}
