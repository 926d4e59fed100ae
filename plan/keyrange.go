package plan

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// find's min and max: the documents whose key for the hinted index lies
// in [min, max), compared field by field in index order (BSON order, each
// field's direction applied), as mongod bounds its index scan with them.

// KeyRange is min and max over the fields of the hinted index.
type KeyRange struct {
	fields   []string
	desc     []bool
	min, max bsoncore.Document // nil: unbounded
}

// ParseKeyRange checks min and max against the hint, as mongod does: a
// hint is needed and both must name its key fields in order. Neither
// given is no range (nil).
func ParseKeyRange(hint bsoncore.Value, min, max bsoncore.Document) (*KeyRange, error) {
	if min == nil && max == nil {
		return nil, nil
	}
	pattern, ok := hint.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location51173, "When using min()/max() a hint of which index to use must be provided")
	}
	els, _ := pattern.Elements()
	kr := &KeyRange{min: min, max: max}
	for _, el := range els {
		n, _ := value.AsInt64(el.Value())
		kr.fields = append(kr.fields, el.Key())
		kr.desc = append(kr.desc, n < 0)
	}
	for _, bound := range []bsoncore.Document{min, max} {
		if bound != nil && !sameFields(bound, kr.fields) {
			return nil, mongoerr.New(mongoerr.Location51174, "The index chosen is not compatible with min/max")
		}
	}
	return kr, nil
}

// HintKeyPattern is the key pattern of the index a hint names by name,
// which min and max are checked against; a pattern is returned as given.
func HintKeyPattern(rd storage.Reader, coll string, hint bsoncore.Value) (bsoncore.Value, error) {
	if hint.Type != bsoncore.TypeString {
		return hint, nil
	}
	ix, isID, err := resolveHint(rd.Indexes(coll), hint)
	if err != nil {
		return bsoncore.Value{}, err
	}
	key := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	if !isID {
		key = ix.Spec.Key
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key}, nil
}

func sameFields(d bsoncore.Document, fields []string) bool {
	els, _ := d.Elements()
	if len(els) != len(fields) {
		return false
	}
	for i, el := range els {
		if el.Key() != fields[i] {
			return false
		}
	}
	return true
}

// compare orders a document's key against a bound.
func (kr *KeyRange) compare(doc, bound bsoncore.Document) int {
	els, _ := bound.Elements()
	for i, el := range els {
		v, ok := value.LookupPath(doc, kr.fields[i])
		if !ok {
			v = bsoncore.Value{Type: bsoncore.TypeNull} // a missing field's key is null
		}
		c := value.Compare(v, el.Value())
		if kr.desc[i] {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

func (kr *KeyRange) contains(doc bsoncore.Document) bool {
	return (kr.min == nil || kr.compare(doc, kr.min) >= 0) && (kr.max == nil || kr.compare(doc, kr.max) < 0)
}

// keyRangeSource keeps the documents of src within the range.
type keyRangeSource struct {
	src Source
	kr  *KeyRange
}

func (s *keyRangeSource) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		d, err := s.src.Next(ctx)
		if err != nil || s.kr.contains(d) {
			return d, err
		}
	}
}
