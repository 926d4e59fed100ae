package query

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $unwind outputs one document per element of an array field.

type unwindSpec struct {
	parts    []string
	index    []string // includeArrayIndex path, nil when absent
	preserve bool
}

func compileUnwindStage(spec bsoncore.Value, _ *pipeCtx) (stage, error) {
	u, err := parseUnwind(spec)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		// One output document per Next, so that a huge array costs no
		// more memory than its input document and stays interruptible.
		var d bsoncore.Document
		var vals []bsoncore.Value // what d unwinds to
		var indexed bool
		next := 0
		var interrupt interrupt.Pacer
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			for next == len(vals) {
				var err error
				if d, err = in.Next(ctx); err != nil {
					return nil, err
				}
				vals, indexed = u.values(d)
				next = 0
			}
			if err := interrupt.Check(ctx); err != nil {
				return nil, err
			}
			idx := value.Null
			if indexed {
				idx = value.Int64(int64(next))
			}
			next++
			return u.emit(d, vals[next-1], idx), nil
		})
	}, nil
}

func parseUnwind(spec bsoncore.Value) (*unwindSpec, error) {
	u := &unwindSpec{}
	var path string
	switch spec.Type {
	case bsoncore.TypeString:
		path = spec.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		err := value.EachField(spec.Data, func(k string, v bsoncore.Value) error {
			switch k {
			case "path":
				if v.Type != bsoncore.TypeString {
					return mongoerr.New(mongoerr.Location28808, "expected a string as the path for $unwind stage, got %s", value.TypeName(v.Type))
				}
				path = v.StringValue()
			case "includeArrayIndex":
				if v.Type != bsoncore.TypeString || v.StringValue() == "" {
					return mongoerr.New(mongoerr.Location28810, "expected a non-empty string for the includeArrayIndex  option to $unwind stage")
				}
				s := v.StringValue()
				if s[0] == '$' {
					return mongoerr.New(mongoerr.Location28822, "includeArrayIndex option to $unwind stage should not be prefixed with a '$': %s", s)
				}
				if err := value.CheckNoNul(s); err != nil {
					return err
				}
				u.index = value.SplitPath(s)
			case "preserveNullAndEmptyArrays":
				if v.Type != bsoncore.TypeBoolean {
					return mongoerr.New(mongoerr.Location28809, "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got %s", value.TypeName(v.Type))
				}
				u.preserve = v.Boolean()
			default:
				return mongoerr.New(mongoerr.Location28811, "unrecognized option to $unwind stage: %s", k)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if path == "" {
			return nil, mongoerr.New(mongoerr.Location28812, "no path specified to $unwind stage")
		}
	default:
		return nil, mongoerr.New(mongoerr.Location15981, "expected either a string or an object as specification for $unwind stage, got %s", value.TypeName(spec.Type))
	}
	if !strings.HasPrefix(path, "$") {
		return nil, mongoerr.New(mongoerr.Location28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	if _, err := compileFieldPath(path, nil); err != nil || strings.HasPrefix(path, "$$") {
		return nil, mongoerr.New(mongoerr.Location28818, "path option to $unwind stage should be prefixed with a '$': %s", path)
	}
	u.parts = value.SplitPath(path[1:])
	return u, nil
}

// values are what d unwinds to, one output document each (a missing
// value removes the field); indexed says they are array elements, whose
// includeArrayIndex is their position rather than null.
func (u *unwindSpec) values(d bsoncore.Document) ([]bsoncore.Value, bool) {
	v := nestedField(d, u.parts)
	switch {
	case v.Type == bsoncore.TypeArray && value.ArrayLen(v.Data) > 0:
		return value.ArrayValues(v.Data), true
	case v.Type == bsoncore.TypeArray, nullish(v):
		if !u.preserve {
			return nil, false
		}
		if v.Type == bsoncore.TypeArray {
			return []bsoncore.Value{{}}, false
		}
	}
	return []bsoncore.Value{v}, false
}

// emit sets the unwound value (missing removes the field) and the index.
func (u *unwindSpec) emit(d bsoncore.Document, v, idx bsoncore.Value) bsoncore.Document {
	m := leafM(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
	setPathM(m, u.parts, v)
	if u.index != nil {
		setPathM(m, u.index, idx)
	}
	return m.value().Data
}

// nestedField follows a path through embedded documents only (arrays
// stop it), as stages that address one field do.
func nestedField(d []byte, parts []string) bsoncore.Value {
	v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
	for _, p := range parts {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return bsoncore.Value{}
		}
		v, _ = value.LookupField(v.Data, p)
	}
	return v
}

// setPathM sets parts in a document node, replacing non-documents on the
// way; a missing v removes the field.
func setPathM(m *mnode, parts []string, v bsoncore.Value) {
	if len(parts) == 1 {
		if v.Type == 0 {
			m.removeChild(parts[0])
			return
		}
		m.setChild(parts[0], leafM(v))
		return
	}
	ch := m.child(parts[0])
	if ch == nil || ch.typ() != bsoncore.TypeEmbeddedDocument {
		if v.Type == 0 {
			return
		}
		ch = newDocM()
		m.setChild(parts[0], ch)
	}
	setPathM(ch, parts[1:], v)
}

// setField returns d with path set to v.
func setField(d bsoncore.Document, path string, v bsoncore.Value) bsoncore.Document {
	m := leafM(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
	setPathM(m, value.SplitPath(path), v)
	return m.value().Data
}
