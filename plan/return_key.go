package plan

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"
)

// keyFields are the key paths of the index the plan reads, for find's
// returnKey: a secondary index's fields; "_id" when it reads by _id (a
// collection is kept in _id order, so a look-up, an _id range, or a scan
// sorted by _id alone is mongod's _id index scan, which sortByID says);
// none for a collection scan, whose documents mongod returns empty.
// Indexes whose keys are not the documents' values as they are (hashed,
// geo, text, wildcard, multikey or collated keys) are refused.
func (p *Plan) keyFields(sortByID bool) ([]string, error) {
	switch {
	case p.ix == nil && (p.idHack || p.idRange != nil || sortByID):
		return []string{"_id"}, nil
	case p.ix == nil:
		return nil, nil
	}
	spec := p.ix.Spec
	_, wild := spec.Wildcard()
	if spec.Text != nil || wild || p.ix.Multikey || spec.Collation() != nil {
		return nil, returnKeyRefused(spec.Name)
	}
	paths := make([]string, 0, len(spec.Fields))
	for _, f := range spec.Fields {
		if f.Hashed || f.Geo != "" {
			return nil, returnKeyRefused(spec.Name)
		}
		paths = append(paths, f.Path)
	}
	return paths, nil
}

func returnKeyRefused(name string) error {
	return mongoerr.New(mongoerr.NotImplemented,
		"returnKey over index %s is not implemented: its keys are not the documents' values (hashed, geo, text, wildcard, multikey or collated)", name)
}

// keysAndRecords shapes a find's documents for returnKey and
// showRecordId: with keys set, each document is replaced by its index key
// (the values of keys, null where the document lacks one, as the index
// holds them; no keys give empty documents, as a collection scan does on
// mongod); otherwise, with recordID, the document's record id is appended
// as $recordId. Without keys the projection p (nil: none) shapes the
// document first.
//
// A collection here is clustered by _id, so a record id is, as on
// mongod's clustered collections, the _id's key: binary data holding the
// order-preserving encoding of the _id (index.EncodeKey). A capped
// collection has record ids of its own (its insertion order), which
// records (nil: none) gives for an _id key, and $recordId is then a long
// as on mongod.
func keysAndRecords(src Source, keys []string, returnKey, recordID bool, p *query.Projection, records func(idKey []byte) (int64, bool)) Source {
	return &keysAndRecordsSource{src: src, keys: keys, returnKey: returnKey, recordID: recordID, p: p, records: records}
}

type keysAndRecordsSource struct {
	src                 Source
	keys                []string
	returnKey, recordID bool
	p                   *query.Projection
	records             func(idKey []byte) (int64, bool)
}

func (s *keysAndRecordsSource) Next(ctx context.Context) (bsoncore.Document, error) {
	d, err := s.src.Next(ctx)
	if err != nil {
		return nil, err
	}
	out := d
	switch {
	case s.returnKey:
		out = keyDocument(d, s.keys)
	case s.p != nil:
		if out, err = s.p.ApplyContext(ctx, d); err != nil {
			return nil, err
		}
	}
	if !s.recordID || s.returnKey { // mongod's key documents hold the keys alone
		return out, nil
	}
	key := index.EncodeID(nil, d.Lookup("_id"))
	if s.records != nil {
		if n, ok := s.records(key); ok {
			return appendValue(out, "$recordId", value.Int64(n)), nil
		}
	}
	rid := bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, 0, key)}
	return appendValue(out, "$recordId", rid), nil
}

func keyDocument(d bsoncore.Document, keys []string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, path := range keys {
		v, ok := value.LookupPath(d, path)
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		b.AppendValue(path, v)
	}
	return b.Build()
}

// appendValue is d with key: v added at its end.
func appendValue(d bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	out := make([]byte, 0, len(d)+len(key)+len(v.Data)+2)
	out = append(out, d[:len(d)-1]...)
	out = bsoncore.AppendValueElement(out, key, v)
	out = append(out, 0)
	bsoncore.UpdateLength(out, 0, int32(len(out)))
	return out
}
