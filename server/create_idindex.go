package server

import (
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// create's idIndex, which mongorestore sends with each collection: the
// spec of the _id index to make. A collection's _id index here is always
// {v: 2, key: {_id: 1}, name: "_id_"} under the collection's collation,
// so a spec that says so is taken, and one that asks for anything else
// is refused rather than ignored.
func checkIDIndex(v bsoncore.Value, ns string, collation bsoncore.Document) error {
	spec, ok := v.DocumentOK()
	if !ok {
		return typeMismatch("create", "idIndex", v, "object")
	}
	els, err := spec.Elements()
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "%s", err.Error())
	}
	for _, el := range els {
		if err := checkIDIndexField(el, ns, collation); err != nil {
			return err
		}
	}
	return nil
}

func checkIDIndexField(el bsoncore.Element, ns string, collation bsoncore.Document) error {
	v := el.Value()
	switch el.Key() {
	case "key":
		key, _ := v.DocumentOK()
		keys, _ := key.Elements()
		if n, ok := value.AsInt64(key.Lookup("_id")); len(keys) != 1 || !ok || n != 1 {
			return mongoerr.New(mongoerr.BadValue, "The field 'key' for an _id index must be {_id: 1}")
		}
	case "name":
		if name, _ := v.StringValueOK(); name != "_id_" {
			return mongoerr.New(mongoerr.BadValue, "The index name for an _id index must be '_id_'")
		}
	case "v":
		if n, ok := value.AsInt64(v); !ok || n != 2 {
			return mongoerr.New(mongoerr.NotImplemented, "create option 'idIndex.v' other than 2 is not supported by DumboDB")
		}
	case "ns":
		if s, _ := v.StringValueOK(); s != ns {
			return mongoerr.New(mongoerr.BadValue, "The 'ns' field of the idIndex spec does not match the collection, %s", ns)
		}
	case "collation":
		c, _ := v.DocumentOK()
		if !sameCollation(c, collation) {
			return mongoerr.New(mongoerr.BadValue, "'idIndex' must have the same collation as the collection.")
		}
	default:
		return mongoerr.New(mongoerr.InvalidIndexSpecificationOption, "The field '%s' is not valid for an _id index specification", el.Key())
	}
	return nil
}

// sameCollation compares an idIndex's collation with the collection's
// (expanded) one: equal field by field where the index names one, and
// the simple locale matching no collation.
func sameCollation(idx, coll bsoncore.Document) bool {
	if idx == nil || idx.Lookup("locale").StringValue() == "simple" {
		return coll == nil
	}
	if coll == nil {
		return false
	}
	els, _ := idx.Elements()
	for _, el := range els {
		if !el.Value().Equal(coll.Lookup(el.Key())) {
			return false
		}
	}
	return true
}
