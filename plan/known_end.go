package plan

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Knowing the end: a find's cursor closes (id 0) when its batch ends the
// result, but mongod only knows that it does in two ways: it read past
// the last document, or the plan can tell it has nothing left without
// reading on. Its scans (collection, index, a blocking sort's output)
// learn their end only by reading past it, so a batch that takes exactly
// the remaining documents leaves the cursor open, and the next getMore
// answers an empty batch and id 0. A limit that is reached, a point
// look-up by _id that was made, and a collection that does not exist
// know at once. Sources that can tell implement EndKnower; the others
// cannot, as mongod's scans cannot.

// EndKnower is a source that can tell it has nothing left without
// reading on.
type EndKnower interface {
	AtEnd() bool
}

// AtEnd reports whether src knows it has nothing left (false: it may
// have more, or cannot tell without reading).
func AtEnd(src Source) bool {
	k, ok := src.(EndKnower)
	return ok && k.AtEnd()
}

// AtEnd: a reached limit ends the read, unless a blocking sort enforces
// it, as mongod's top-k sort does: that sort, like any, tells its end
// only when read past it.
func (s *skipLimitSource) AtEnd() bool {
	return (!s.bySort && s.limit > 0 && s.returned >= s.limit) || AtEnd(s.src)
}

func (s *projectSource) AtEnd() bool        { return AtEnd(s.src) }
func (s *keyRangeSource) AtEnd() bool       { return AtEnd(s.src) }
func (s *keysAndRecordsSource) AtEnd() bool { return AtEnd(s.src) }

// pointLookup is the result of a point look-up by _id (mongod's IDHACK):
// at most one document, and the look-up, once made, knows there is no
// other.
type pointLookup struct {
	src    Source
	looked bool
}

func (s *pointLookup) Next(ctx context.Context) (bsoncore.Document, error) {
	s.looked = true
	return s.src.Next(ctx)
}

func (s *pointLookup) AtEnd() bool { return s.looked }

// idHackEligible reports whether mongod would read r with IDHACK, given
// that the planner pinned _id: a filter of the _id equality alone, with
// neither a hint, min or max, skip, showRecordId nor tailable.
func (r *Read) idHackEligible() bool {
	if r.Hint.Type != 0 || r.KeyRange != nil || r.Skip > 0 || r.ShowRecordID {
		return false
	}
	elems, err := bsoncore.Document(r.FilterDoc).Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return false
	}
	v := elems[0].Value()
	switch v.Type {
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false // no exact bounds
	case bsoncore.TypeEmbeddedDocument:
		first, err := v.Document().IndexErr(0)
		return err != nil || !strings.HasPrefix(first.Key(), "$") // a literal document, not operators
	}
	return true
}
