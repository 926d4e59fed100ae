package index

import (
	"bytes"

	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// KeyValue is the keyValue document of a duplicate key error: for each key
// field, the value of doc whose encoding is in the entry's field part.
func (s *Spec) KeyValue(doc, fields []byte) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	rest := fields
	for i := 0; i < len(s.Fields); i++ {
		f := s.Fields[i]
		if f.Path == "_fts" && s.Text != nil {
			// A text entry's term and score (_ftsx follows _fts).
			term, score, n := s.textKeyValue(doc, rest)
			b.AppendValue("_fts", term).AppendValue("_ftsx", score)
			rest = rest[n:]
			i++
			continue
		}
		v, n := matchValue(collect(doc, f.Path).vals, rest, f.Desc, s.coll)
		b.AppendValue(f.Path, v)
		rest = rest[n:]
	}
	return b.Build()
}

func matchValue(vals []bsoncore.Value, rest []byte, desc bool, c *value.Collation) (bsoncore.Value, int) {
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

// ShellDoc formats a document the way mongod's messages do:
// { a: 1, b: "x" }.
func ShellDoc(d bsoncore.Document) string {
	return value.Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}

// ShellValue formats one value as mongod's messages do.
func ShellValue(v bsoncore.Value) string { return value.Format(v) }
