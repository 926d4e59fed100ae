package server

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// idHackID returns the _id a find looks up alone, as mongod's IDHACK
// does: a filter of exactly {_id: v} where v's equality is its key's
// (a number that is not NaN, a string under the simple collation, an
// ObjectId, a date or a boolean: no operator document, array, regular
// expression or null), and no option that checks, shapes, orders or
// skips what is found. Anything else takes the planner.
func idHackID(a *findArgs, collation bsoncore.Document) (bsoncore.Value, bool) {
	switch {
	case len(a.sort) > 0, len(a.projection) > 0, len(a.let) > 0, len(a.min) > 0, len(a.max) > 0,
		a.hint.Type != 0, a.skip > 0, a.returnKey, a.showRecordID, a.tailable:
		return bsoncore.Value{}, false
	}
	if len(a.filter) < 5 {
		return bsoncore.Value{}, false
	}
	// One element and the terminating NUL, read in place: Elements would
	// allocate on every findOne.
	elem, rest, ok := bsoncore.ReadElement(a.filter[4:])
	if !ok || len(rest) != 1 || elem.Key() != "_id" {
		return bsoncore.Value{}, false
	}
	v := elem.Value()
	switch v.Type {
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeObjectID, bsoncore.TypeDateTime, bsoncore.TypeBoolean:
		return v, true
	case bsoncore.TypeDouble:
		return v, !math.IsNaN(v.Double())
	case bsoncore.TypeString:
		return v, len(collation) == 0
	}
	return bsoncore.Value{}, false
}
