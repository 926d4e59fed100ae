package index

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query"
)

// KeyValue is the keyValue document of a duplicate key error: for each key
// field, the value of doc whose encoding is in the entry's field part.
func (s *Spec) KeyValue(doc, fields []byte) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	rest := fields
	for _, f := range s.Fields {
		v, n := matchValue(collect(doc, f.Path).vals, rest, f.Desc, s.coll)
		b.AppendValue(f.Path, v)
		rest = rest[n:]
	}
	return b.Build()
}

func matchValue(vals []bsoncore.Value, rest []byte, desc bool, c *query.Collation) (bsoncore.Value, int) {
	for _, v := range vals {
		enc := EncodeKeyCollated(nil, v, c)
		if desc {
			complement(enc)
		}
		if bytes.HasPrefix(rest, enc) {
			return v, len(enc)
		}
	}
	return nullValue, 0
}

// ShellDoc formats a flat document the way mongod's messages do:
// { a: 1, b: "x" }.
func ShellDoc(d bsoncore.Document) string {
	els, _ := d.Elements()
	parts := make([]string, len(els))
	for i, el := range els {
		parts[i] = el.Key() + ": " + ShellValue(el.Value())
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// ShellValue formats one value as mongod's messages do.
func ShellValue(v bsoncore.Value) string {
	switch v.Type {
	case bsoncore.TypeInt32:
		return strconv.Itoa(int(v.Int32()))
	case bsoncore.TypeInt64:
		return strconv.FormatInt(v.Int64(), 10)
	case bsoncore.TypeDouble:
		return strconv.FormatFloat(v.Double(), 'g', -1, 64)
	case bsoncore.TypeString:
		return strconv.Quote(v.StringValue())
	case bsoncore.TypeBoolean:
		return strconv.FormatBool(v.Boolean())
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeMinKey:
		return "MinKey"
	case bsoncore.TypeMaxKey:
		return "MaxKey"
	case bsoncore.TypeObjectID:
		id := v.ObjectID()
		return "ObjectId('" + hex.EncodeToString(id[:]) + "')"
	case bsoncore.TypeEmbeddedDocument:
		return ShellDoc(v.Document())
	}
	return v.String()
}
