package server

import (
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Clustered collections (create's clusteredIndex): every DumboDB
// collection is already stored in _id order, so a clustered collection
// differs only in what the catalog says of it and in its TTL on _id
// (expireAfterSeconds at create). mongod supports only the key {_id: 1}.

// parseClusteredIndex validates create's clusteredIndex as mongod does
// and returns the spec stored in the options: {v: 2, key: {_id: 1},
// name, unique: true}.
func parseClusteredIndex(v bsoncore.Value) (bsoncore.Document, error) {
	if b, ok := v.BooleanOK(); ok { // the legacy form: the canonical spec
		if !b {
			return nil, nil
		}
		return clusteredSpec("_id_"), nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, typeMismatch("create", "clusteredIndex", v, "object")
	}
	name, unique, version := "_id_", false, int64(2)
	var key bsoncore.Document
	els, _ := d.Elements()
	for _, el := range els {
		var ok bool
		switch el.Key() {
		case "key":
			key, ok = el.Value().DocumentOK()
		case "unique":
			unique, ok = asBool(el.Value())
		case "name":
			name, ok = el.Value().StringValueOK()
		case "v":
			version, ok = value.AsInt64(el.Value())
		default:
			return nil, unknownField("clusteredIndex", el.Key())
		}
		if !ok {
			return nil, typeMismatch("clusteredIndex", el.Key(), el.Value(), map[string]string{"key": "object", "unique": "bool", "name": "string", "v": "int"}[el.Key()])
		}
	}
	if key == nil {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'clusteredIndex.key' is missing but a required field")
	}
	if !unique {
		return nil, mongoerr.New(mongoerr.Location5979700, "The clusteredIndex option requires unique: true to be specified")
	}
	if n, ok := value.AsInt64(key.Lookup("_id")); !ok || n != 1 || len(keyFields(key)) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidIndexSpecificationOption, "The clusteredIndex option is only supported for key: {_id: 1}")
	}
	if version != 2 {
		return nil, mongoerr.New(mongoerr.Location5979704, "Invalid clusteredIndex specification %s; cannot create a clusteredIndex with v=%d", d.String(), version)
	}
	return clusteredSpec(name), nil
}

func keyFields(key bsoncore.Document) []bsoncore.Element {
	els, _ := key.Elements()
	return els
}

func clusteredSpec(name string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendInt32("v", 2).
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		AppendString("name", name).
		AppendBoolean("unique", true).Build()
}

// clusteredIndexOf is a collection's clustered index spec (nil: not
// clustered).
func clusteredIndexOf(ci storage.CollectionInfo) bsoncore.Document {
	d, _ := ci.Options.Lookup("clusteredIndex").DocumentOK()
	return d
}

// idIndexOf is what listIndexes shows for a collection's _id: the _id_
// index, or a clustered collection's clustered index.
func idIndexOf(ci storage.CollectionInfo) bsoncore.Document {
	spec := clusteredIndexOf(ci)
	if spec == nil {
		return idIndexSpecOf(ci)
	}
	return appendFields(spec, func(b *bsoncore.DocumentBuilder) { b.AppendBoolean("clustered", true) })
}

// checkClusteredTTL refuses create's expireAfterSeconds as mongod does:
// it needs a clustered collection, and a whole number of seconds that is
// not negative.
func checkClusteredTTL(opts bsoncore.Document) error {
	v, err := opts.LookupErr("expireAfterSeconds")
	if err != nil {
		return nil
	}
	if opts.Lookup("clusteredIndex").Type == 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' requires clustering to be enabled")
	}
	if n, ok := value.AsInt64(v); !ok || n < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be a non-negative whole number of seconds, got %s", value.Format(v))
	}
	return nil
}

// keepsImagesOption reports whether create's options enable change-stream
// images.
func keepsImagesOption(opts bsoncore.Document) bool {
	on, _ := opts.Lookup("changeStreamPreAndPostImages", "enabled").BooleanOK()
	return on
}
