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
	if s.wildProj != nil {
		return s.wildProj.keeps(path)
	}
	return root == "" || path == root || strings.HasPrefix(path, root+".")
}

// wildcardProjection is an all-fields wildcard index's
// wildcardProjection: the paths it indexes (include) or leaves out, and
// whether it indexes _id (left out unless named).
type wildcardProjection struct {
	include bool
	paths   []string
	id      bool
}

// keeps reports whether the index holds path's values.
func (w *wildcardProjection) keeps(path string) bool {
	if path == "_id" || strings.HasPrefix(path, "_id.") {
		return w.id
	}
	for _, p := range w.paths {
		if path == p || strings.HasPrefix(path, p+".") {
			return w.include
		}
	}
	return !w.include
}

// descends reports whether paths under path may be indexed.
func (w *wildcardProjection) descends(path string) bool {
	if w.keeps(path) {
		return true
	}
	if !w.include {
		return false
	}
	if path == "_id" {
		return w.id
	}
	for _, p := range w.paths {
		if strings.HasPrefix(p, path+".") {
			return true
		}
	}
	return false
}

// parseWildcardProjection reads the wildcardProjection option: a
// projection of inclusions or of exclusions, either of which may also
// name _id.
func (s *Spec) parseWildcardProjection(v bsoncore.Value) error {
	d, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "The field 'wildcardProjection' must be an object, not %s", v.Type)
	}
	els, _ := d.Elements()
	if len(els) == 0 {
		return mongoerr.New(codeCannotCreateIndex, "The field 'wildcardProjection' must be a non-empty object")
	}
	w := &wildcardProjection{}
	mode := 0 // 1: inclusion, -1: exclusion
	for _, el := range els {
		on, ok := projectionFlag(el.Value())
		if !ok {
			return mongoerr.New(codeCannotCreateIndex, "The wildcardProjection's field '%s' must be a number or a boolean", el.Key())
		}
		if el.Key() == "_id" {
			w.id = on
			continue
		}
		switch {
		case mode == 1 && !on:
			return mongoerr.New(mongoerr.Location31254, "Cannot do exclusion on field %s in inclusion projection", el.Key())
		case mode == -1 && on:
			return mongoerr.New(mongoerr.Location31253, "Cannot do inclusion on field %s in exclusion projection", el.Key())
		case on:
			mode = 1
		default:
			mode = -1
		}
		w.paths = append(w.paths, el.Key())
	}
	w.include = mode == 1 || (mode == 0 && w.id)
	s.wildProj = w
	return nil
}

// projectionFlag reads a projection's 1/0 or true/false.
func projectionFlag(v bsoncore.Value) (on, ok bool) {
	if v.Type == bsoncore.TypeBoolean {
		return v.Boolean(), true
	}
	f, ok := v.AsFloat64OK()
	return f != 0, ok
}

func (s *Spec) checkWildcard() error {
	root, ok := s.Wildcard()
	if !ok || root != "" {
		if s.wildProj != nil {
			return mongoerr.New(codeCannotCreateIndex, "The field 'wildcardProjection' is only allowed in an 'all-fields' wildcard index")
		}
		if !ok {
			return nil
		}
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
		if s.wildProj == nil || s.wildProj.keeps(path) {
			keys = append(keys, EncodeKey(WildcardPathKey(path), v))
		}
	}
	var visit func(path string, v bsoncore.Value)
	visit = func(path string, v bsoncore.Value) {
		if s.wildProj != nil && !s.wildProj.descends(path) {
			return
		}
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
			if el.Key() != "_id" || (s.wildProj != nil && s.wildProj.id) {
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
