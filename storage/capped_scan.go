package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// naturalIter yields a capped collection's documents in insertion order:
// the order is read whole when the scan starts (a capped collection is
// bounded by its size), the documents one by one as they are asked for.
type naturalIter struct {
	entries []NaturalEntry
	base    prolly.Map
	edits   *edits
}

// newNaturalIterator scans c (whose document edits are ed) oldest first,
// or newest first when reverse.
func newNaturalIterator(ctx context.Context, ns tree.NodeStore, c *collection, ed *edits, reverse bool) (*Iterator, error) {
	entries, err := naturalAfter(ctx, ns, c.capped, 0)
	if err != nil {
		return nil, err
	}
	if reverse {
		slices.Reverse(entries)
	}
	return &Iterator{ns: ns, nat: &naturalIter{entries: entries, base: c.base, edits: ed}}, nil
}

// next returns the next document's bytes (nil: it is gone) or io.EOF.
func (n *naturalIter) next(ctx context.Context, ns tree.NodeStore) (bsoncore.Document, error) {
	if len(n.entries) == 0 {
		return nil, io.EOF
	}
	e := n.entries[0]
	n.entries = n.entries[1:]
	doc, found, err := lookup(ctx, ns, n.base, n.edits, e.IDKey)
	if err != nil || !found {
		return nil, err
	}
	return doc, nil
}

// NaturalScan iterates over a collection in insertion order (reverse:
// newest first); a collection that is not capped is scanned in _id order,
// its natural order, and reverse is left to the caller.
func (s *Snapshot) NaturalScan(ctx context.Context, coll string, reverse bool) (*Iterator, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok {
		return &Iterator{}, nil
	}
	if c.capped == nil {
		return s.Scan(ctx, coll)
	}
	it, err := newNaturalIterator(ctx, s.ns, c, c.edits, reverse)
	if it != nil {
		it.owner = s
	}
	return it, err
}

// NaturalAfter lists a capped collection's documents inserted after
// record id after (0: from the first), oldest first: what a tailable
// cursor has not returned yet. A collection that is not capped has none.
func (s *Snapshot) NaturalAfter(ctx context.Context, coll string, after int64) ([]NaturalEntry, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok || c.capped == nil {
		return nil, nil
	}
	return naturalAfter(ctx, s.ns, c.capped, after)
}

// CappedBytes is a capped collection's live BSON bytes (0: not capped).
func (s *Snapshot) CappedBytes(coll string) int64 {
	if c, ok := s.st.colls.lookup(coll); ok && c.capped != nil {
		return c.capped.bytes
	}
	return 0
}

// RecordID is a capped collection's record id of the document with _id
// key idKey (false: none, or not capped).
func (s *Snapshot) RecordID(ctx context.Context, coll string, idKey []byte) (int64, bool) {
	c, ok := s.st.colls.lookup(coll)
	if !ok || c.capped == nil {
		return 0, false
	}
	v, found, err := lookup(ctx, s.ns, c.capped.base, c.capped.edits, posKey(idKey))
	if err != nil || !found || len(v) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(v)), true
}

// CheckCapped compares a capped collection's insertion order with its
// documents, for validate: every document in the order once, nothing
// else, and the byte count and last record id in step. It lists what is
// wrong (none: consistent, or not capped).
func (s *Snapshot) CheckCapped(ctx context.Context, coll string) ([]string, error) {
	c, ok := s.st.colls.lookup(coll)
	if !ok || c.capped == nil {
		return nil, nil
	}
	entries, err := naturalAfter(ctx, s.ns, c.capped, 0)
	if err != nil {
		return nil, err
	}
	var problems []string
	var bytes int64
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		doc, found, err := lookup(ctx, s.ns, c.base, c.edits, e.IDKey)
		if err != nil {
			return nil, err
		}
		if !found || seen[string(e.IDKey)] {
			problems = append(problems, fmt.Sprintf("record id %d names a missing or repeated document", e.RecordID))
			continue
		}
		seen[string(e.IDKey)] = true
		bytes += int64(len(doc))
		if e.RecordID > c.capped.last {
			problems = append(problems, fmt.Sprintf("record id %d is past the last one given (%d)", e.RecordID, c.capped.last))
		}
	}
	if len(seen) != c.count {
		problems = append(problems, fmt.Sprintf("the insertion order holds %d documents, the collection %d", len(seen), c.count))
	}
	if bytes != c.capped.bytes {
		problems = append(problems, fmt.Sprintf("the insertion order counts %d bytes, the documents hold %d", c.capped.bytes, bytes))
	}
	return problems, nil
}
