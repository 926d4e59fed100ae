package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
)

// maxViolationBytes bounds the _id values IndexDuplicates returns: half
// the 16 MB a reply may take, as mongod bounds its violations.
const maxViolationBytes = 8 << 20

// Duplicates is what IndexDuplicates found: the _id values of the
// documents that share a key, one group per key, and whether groups were
// left out to stay within maxViolationBytes.
type Duplicates struct {
	Groups    [][]bsoncore.Value
	Truncated bool
}

// IndexReader reads index entries and the documents they name: a
// Snapshot or a Tx.
type IndexReader interface {
	IndexScan(ctx context.Context, coll, name string, iv index.Interval) (*IndexIterator, error)
	GetKey(ctx context.Context, coll string, idKey []byte) (bsoncore.Document, bool, error)
}

// IndexDuplicates walks index name of coll in key order and groups the
// documents whose entries have the same key fields, as collMod does
// before it makes an index unique. Entries are key fields followed by the
// _id key, so equal keys are neighbours and one pass finds them all.
func IndexDuplicates(ctx context.Context, r IndexReader, coll, name string) (Duplicates, error) {
	it, err := r.IndexScan(ctx, coll, name, index.Interval{})
	if err != nil {
		return Duplicates{}, err
	}
	var dups Duplicates
	var prev []byte    // the last entry's key fields
	var group [][]byte // _id keys of the documents holding prev
	size := 0
	flush := func() error {
		if len(group) < 2 {
			return nil
		}
		ids, n, err := idValues(ctx, r, coll, group, maxViolationBytes-size)
		size += n
		if len(ids) > 0 {
			dups.Groups = append(dups.Groups, ids)
		}
		dups.Truncated = dups.Truncated || len(ids) < len(group)
		return err
	}
	for !dups.Truncated {
		entry, idKey, err := it.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Duplicates{}, err
		}
		if bytes.Equal(entry, index.MultikeyMarker) {
			continue
		}
		fields := entry[:len(entry)-len(idKey)]
		if prev != nil && bytes.Equal(fields, prev) {
			group = append(group, append([]byte(nil), idKey...))
			continue
		}
		if err := flush(); err != nil {
			return Duplicates{}, err
		}
		prev, group = append(prev[:0], fields...), [][]byte{append([]byte(nil), idKey...)}
	}
	if !dups.Truncated {
		if err := flush(); err != nil {
			return Duplicates{}, err
		}
	}
	return dups, nil
}

// idValues reads the _id values of the documents with the given _id keys
// (index keys cannot be decoded back to values), stopping before they
// take more than budget bytes; it returns them and the bytes they took.
func idValues(ctx context.Context, r IndexReader, coll string, idKeys [][]byte, budget int) ([]bsoncore.Value, int, error) {
	var out []bsoncore.Value
	size := 0
	for _, k := range idKeys {
		doc, found, err := r.GetKey(ctx, coll, k)
		if err != nil {
			return out, size, err
		}
		if !found {
			return out, size, fmt.Errorf("collection %s: an index entry names a missing document %x", coll, k)
		}
		id := doc.Lookup("_id")
		if size+len(id.Data) > budget {
			break
		}
		size += len(id.Data)
		out = append(out, id)
	}
	return out, size, nil
}

// Unchanged reports whether this transaction sees collection coll exactly
// as snapshot s does: no write, checkpoint or version-control operation
// has replaced it since s was taken (they all make a new collection
// state), so what was read from s still holds.
func (tx *Tx) Unchanged(s *Snapshot, coll string) bool {
	c := tx.view(coll)
	return c != nil && c == s.st.colls.get(coll)
}
