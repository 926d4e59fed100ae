package index

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// Wildcard indexes ({"$**": 1}, {"a.$**": 1}) have one entry per scalar
// a document holds under the indexed root (array elements one by one,
// paths without array positions, _id left out): the encoded path (a
// string key), the encoded value, then the _id key.

// Wildcard reports a wildcard index and the root path it covers ("" for
// the whole document).
func (s *Spec) Wildcard() (root string, ok bool) {
	if len(s.Fields) != 1 {
		return "", false
	}
	p := s.Fields[0].Path
	switch {
	case p == "$**":
		return "", true
	case strings.HasSuffix(p, ".$**"):
		return strings.TrimSuffix(p, ".$**"), true
	}
	return "", false
}

// WildcardCovers reports whether a query path falls under the index.
func (s *Spec) WildcardCovers(path string) bool {
	root, ok := s.Wildcard()
	if !ok || path == "_id" || strings.HasPrefix(path, "_id.") || strings.Contains(path, "$") {
		return false
	}
	return root == "" || path == root || strings.HasPrefix(path, root+".")
}

func (s *Spec) checkWildcard() error {
	if _, ok := s.Wildcard(); !ok {
		return nil
	}
	switch {
	case s.Fields[0].Desc:
		return mongoerr.New(codeCannotCreateIndex, "A numeric value in a $** index key pattern must be positive.")
	case s.RefusesDuplicates():
		return mongoerr.New(codeCannotCreateIndex, "Index type 'wildcard' does not support the unique option")
	case s.Sparse:
		return mongoerr.New(codeCannotCreateIndex, "Index type 'wildcard' does not support the sparse option")
	case s.ExpireAfter >= 0:
		return mongoerr.New(codeCannotCreateIndex, "Index type 'wildcard' cannot be a TTL index")
	}
	return nil
}

// WildcardPathKey is the key prefix of a path's entries.
func WildcardPathKey(path string) []byte {
	return EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, path)})
}

func (s *Spec) wildcardKeys(doc bsoncore.Document) ([][]byte, bool, error) {
	if s.partial != nil && !s.partial.Match(doc) {
		return nil, false, nil
	}
	root, _ := s.Wildcard()
	var keys [][]byte
	multikey := false
	add := func(path string, v bsoncore.Value) {
		keys = append(keys, EncodeKey(WildcardPathKey(path), v))
	}
	var visit func(path string, v bsoncore.Value)
	visit = func(path string, v bsoncore.Value) {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			els, _ := bsoncore.Document(v.Data).Elements()
			for _, el := range els {
				visit(join(path, el.Key()), el.Value())
			}
		case bsoncore.TypeArray:
			multikey = true
			vals, _ := bsoncore.Array(v.Data).Values()
			for _, e := range vals {
				visit(path, e)
			}
		default:
			add(path, v)
		}
	}
	if root == "" {
		els, _ := doc.Elements()
		for _, el := range els {
			if el.Key() != "_id" {
				visit(el.Key(), el.Value())
			}
		}
	} else {
		// Reach the root through arrays of documents as queries do.
		var reach func(v bsoncore.Value, parts []string)
		reach = func(v bsoncore.Value, parts []string) {
			if len(parts) == 0 {
				visit(root, v)
				return
			}
			switch v.Type {
			case bsoncore.TypeEmbeddedDocument:
				if c, err := bsoncore.Document(v.Data).LookupErr(parts[0]); err == nil {
					reach(c, parts[1:])
				}
			case bsoncore.TypeArray:
				multikey = true
				vals, _ := bsoncore.Array(v.Data).Values()
				for _, e := range vals {
					if e.Type == bsoncore.TypeEmbeddedDocument {
						reach(e, parts)
					}
				}
			}
		}
		reach(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}, strings.Split(root, "."))
	}
	for _, k := range keys {
		if len(k) > MaxKeySize {
			return nil, false, mongoerr.New(codeKeyTooLong, "key too large to index: %d bytes exceeds the %d byte limit (index %s)", len(k), MaxKeySize, s.Name)
		}
	}
	return dedupe(keys), multikey, nil
}
