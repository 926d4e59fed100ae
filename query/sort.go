package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Sort is a compiled sort specification.
type Sort struct {
	keys    []sortKey
	coll    *value.Collation
	natural int // {$natural: 1|-1}: storage order, forward or reversed
	// query gives {$meta: "textScore"} keys their scores; env's text
	// query does when the planner bound another compilation of the same
	// $text (an aggregate's first $match).
	query  *Filter
	env    *Env
	scores map[*byte]float64
}

type sortKey struct {
	parts []string
	desc  bool
	score bool // {$meta: "textScore"}: by text score, highest first
}

// emptyArrayKey is the sort key of an empty array: it sorts below null,
// which mongod achieves by keying empty arrays as undefined.
var emptyArrayKey = bsoncore.Value{Type: bsoncore.TypeUndefined}

// CompileSort validates {field: 1|-1, ...}.
func CompileSort(sort bsoncore.Document) (*Sort, error) { return CompileSortEnv(sort, nil) }

// CompileSortEnv compiles a sort whose string keys follow env's collation.
func CompileSortEnv(sort bsoncore.Document, env *Env) (*Sort, error) {
	return compileSort(sort, env, nil)
}

// CompileSortQuery compiles a find's sort, whose {$meta: "textScore"}
// keys order by the text score of the query's $text.
func CompileSortQuery(sort bsoncore.Document, env *Env, f *Filter) (*Sort, error) {
	return compileSort(sort, env, f)
}

func compileSort(sort bsoncore.Document, env *Env, f *Filter) (*Sort, error) {
	s := &Sort{coll: env.coll(), query: f, env: env}
	it := value.NewIter(sort)
	for {
		k, v, ok := it.Next()
		if !ok {
			return s, nil
		}
		key := string(k)
		if v.Type == bsoncore.TypeEmbeddedDocument && value.FirstKey(v.Data) == "$meta" && f != nil {
			if m, _ := value.LookupField(v.Data, "$meta"); m.Type != bsoncore.TypeString || m.StringValue() != "textScore" {
				return nil, mongoerr.New(mongoerr.Location17308, "Unsupported argument to $meta: %s", value.Format(m))
			}
			if !f.HasText() {
				return nil, mongoerr.New(mongoerr.Location40218, "query requires text score metadata, but it is not available")
			}
			s.keys = append(s.keys, sortKey{parts: value.SplitPath(key), score: true})
			continue
		}
		if v.Type == bsoncore.TypeEmbeddedDocument && value.FirstKey(v.Data) == "$meta" {
			if m, _ := value.LookupField(v.Data, "$meta"); m.Type == bsoncore.TypeString && m.StringValue() == "textScore" {
				return nil, mongoerr.New(mongoerr.Location40218, "query requires text score metadata, but it is not available")
			}
			return nil, mongoerr.New(mongoerr.NotImplemented, "$meta sort other than textScore is not supported by DumboDB yet")
		}
		if !value.IsNumber(v) {
			return nil, mongoerr.New(mongoerr.Location15974, "Illegal key in $sort specification: %s", value.FormatElem(key, v))
		}
		if key != "$natural" {
			if err := value.CheckFieldPath(key); err != nil {
				return nil, err
			}
		}
		switch f := value.ToFloat(v); {
		case key == "$natural" && (f == 1 || f == -1):
			s.natural = int(f)
		case f == 1 || f == -1:
			s.keys = append(s.keys, sortKey{parts: value.SplitPath(key), desc: f < 0})
		default:
			return nil, mongoerr.New(mongoerr.Location15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)")
		}
	}
}

// Natural returns 1 or -1 for a {$natural: ±1} sort (0 otherwise).
func (s *Sort) Natural() int { return s.natural }

// HasKeys reports whether the sort orders by document fields at all.
func (s *Sort) HasKeys() bool { return len(s.keys) > 0 }

// Paths are the dotted paths the sort orders by ("" for a text score).
func (s *Sort) Paths() []string {
	out := make([]string, len(s.keys))
	for i, k := range s.keys {
		if !k.score {
			out[i] = strings.Join(k.parts, ".")
		}
	}
	return out
}

// Compare orders two documents by the sort keys; 0 means a tie.
func (s *Sort) Compare(a, b bsoncore.Document) int {
	for _, k := range s.keys {
		if k.score {
			if c := cmpFloat(s.scoreOf(b), s.scoreOf(a)); c != 0 {
				return c
			}
			continue
		}
		c := value.CompareWith(k.keyOf(a, s.coll), k.keyOf(b, s.coll), s.coll)
		if k.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return 0
}

// keyOf extracts a document's sort key: with arrays along the path the
// smallest reached value ascending, the largest descending; missing is null.
func (k sortKey) keyOf(doc []byte, coll *value.Collation) bsoncore.Value {
	var best bsoncore.Value
	found, sawEmpty := false, false
	value.WalkPath(doc, k.parts, func(v bsoncore.Value, kind value.VisitKind) bool {
		switch {
		case kind == value.KindMissing:
			v = value.Null
		case kind == value.KindValue && v.Type == bsoncore.TypeArray:
			// The elements are visited next; the array itself is not a key.
			sawEmpty = sawEmpty || value.ArrayLen(v.Data) == 0
			return false
		}
		if !found {
			best, found = v, true
			return false
		}
		if c := value.CompareWith(v, best, coll); (c < 0 && !k.desc) || (c > 0 && k.desc) {
			best = v
		}
		return false
	})
	switch {
	case found:
		return best
	case sawEmpty:
		return emptyArrayKey
	}
	return value.Null
}

func (s *Sort) scoreOf(d bsoncore.Document) float64 {
	if len(d) == 0 {
		return 0
	}
	if s.scores == nil {
		s.scores = map[*byte]float64{}
	}
	p := &d[0]
	if v, ok := s.scores[p]; ok {
		return v
	}
	v, ok := s.query.TextScore(d)
	if !ok && s.env != nil && s.env.textQuery != nil {
		v, _ = s.env.textQuery.TextScore(d)
	}
	s.scores[p] = v
	return v
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
