package index

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// coveredMarker starts an entry value that carries covered values. Plain
// entry values are a bare encoded _id, whose first byte is a class byte
// (small numbers), never this.
const coveredMarker = 0xFE

// EntryValue is the value of an index entry: the document's _id key, and
// when covered is set, the document reduced to the index's key fields
// (marker, uvarint length of idKey, idKey, covered BSON).
func EntryValue(idKey, covered []byte) []byte {
	if covered == nil {
		return append([]byte(nil), idKey...)
	}
	out := make([]byte, 0, 1+binary.MaxVarintLen64+len(idKey)+len(covered))
	out = append(out, coveredMarker)
	out = binary.AppendUvarint(out, uint64(len(idKey)))
	out = append(out, idKey...)
	return append(out, covered...)
}

// SplitEntryValue undoes EntryValue: covered is nil for an entry that has
// no covered values (written before they existed, or by a multikey
// document).
func SplitEntryValue(v []byte) (idKey, covered []byte) {
	if len(v) == 0 || v[0] != coveredMarker {
		return v, nil
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 || uint64(len(v)-1-w) < n {
		return v, nil
	}
	start := 1 + w
	return v[start : start+int(n)], v[start+int(n):]
}

// Covered is what an index entry of doc stores so that queries needing
// only the key fields can skip fetching doc: doc projected onto the key
// fields. It is nil for a document that makes the index multikey (its
// entries hold one array element each, which a projection cannot give)
// and for an index with a collation, which never covers a query (as on
// mongod, whose keys of such an index hold sort keys, not strings).
func (s *Spec) Covered(doc bsoncore.Document, multikey bool) []byte {
	if _, wild := s.Wildcard(); doc == nil || multikey || s.Text != nil || wild || s.coll != nil {
		return nil
	}
	t := s.coverTree()
	if t == nil {
		return nil
	}
	return t.project(doc)
}

// CanCover reports whether entries of this index carry covered values
// (the key paths project without collision).
func (s *Spec) CanCover() bool {
	_, wild := s.Wildcard()
	_, geoField := s.GeoField()
	return s.Text == nil && !wild && s.coll == nil && !s.Hashed() && !geoField && s.coverTree() != nil
}
