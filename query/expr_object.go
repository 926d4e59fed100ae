package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Object expressions: $getField and $setField read and write fields whose
// names contain '.' or start with '$', which field paths cannot name;
// $objectToArray and $arrayToObject turn documents into [{k, v}] arrays
// and back; $mergeObjects merges documents (as an accumulator it is
// acc_basic.go's).

// fieldAccessExpr is $getField (value == nil) or $setField.
type fieldAccessExpr struct {
	name         string
	field, input Expr
	value        Expr
}

func compileFieldAccess(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	e := &fieldAccessExpr{name: name, input: &pathExprX{base: "CURRENT"}}
	if arg.Type != bsoncore.TypeEmbeddedDocument || value.IsOperatorDoc(arg) {
		if name == "$setField" {
			return nil, mongoerr.New(mongoerr.Location4161100, "$setField only supports an object as its argument")
		}
		x, err := compileExpr(arg, s) // {$getField: "name"} shorthand
		e.field = x
		return e, err
	}
	var hasValue bool
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		x, err := compileExpr(v, s)
		if err != nil {
			return nil, err
		}
		switch string(k) {
		case "field":
			e.field = x
		case "input":
			e.input = x
		case "value":
			if name == "$setField" {
				e.value, hasValue = x, true
				continue
			}
			fallthrough
		default:
			return nil, mongoerr.New(mongoerr.Location3041701, "%s found an unknown argument: %s", name, k)
		}
	}
	switch {
	case e.field == nil:
		return nil, mongoerr.New(mongoerr.Location3041702, "%s requires 'field' to be specified", name)
	case name == "$setField" && !hasValue:
		return nil, mongoerr.New(mongoerr.Location4161102, "$setField requires 'value' to be specified")
	}
	return e, nil
}

func (e *fieldAccessExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	f, err := e.field.eval(c)
	if err != nil {
		return f, err
	}
	if f.Type != bsoncore.TypeString {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location3041704, "%s requires 'field' to evaluate to type String, but got %s", e.name, exprTypeName(f))
	}
	in, err := e.input.eval(c)
	if err != nil {
		return in, err
	}
	if e.value == nil {
		if in.Type != bsoncore.TypeEmbeddedDocument {
			return bsoncore.Value{}, nil
		}
		v, _ := value.LookupField(in.Data, f.StringValue())
		return v, nil
	}
	switch {
	case nullish(in):
		return value.Null, nil
	case in.Type != bsoncore.TypeEmbeddedDocument:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location4161105, "$setField requires 'input' to evaluate to type Object")
	}
	if strings.IndexByte(f.StringValue(), 0) >= 0 { // a BSON field name ends at its first NUL
		return bsoncore.Value{}, mongoerr.New(mongoerr.BadValue, "$setField: the field name must not contain a null byte")
	}
	v, err := e.value.eval(c)
	if err != nil {
		return v, err
	}
	m := leafM(in)
	if v.Type == 0 {
		m.removeChild(f.StringValue())
	} else {
		m.setChild(f.StringValue(), leafM(v))
	}
	return m.value(), nil
}

func evalObjectToArray(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(a[0]) {
		return value.Null, nil
	}
	if a[0].Type != bsoncore.TypeEmbeddedDocument {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40390, "$objectToArray requires a document input, found: %s", value.TypeName(a[0].Type))
	}
	out := newArrayBuilder(c, "$objectToArray")
	it := value.NewIter(a[0].Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			return out.value(), nil
		}
		d := bsoncore.NewDocumentBuilder().AppendString("k", string(k)).AppendValue("v", v).Build()
		if err := out.add(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}); err != nil {
			return bsoncore.Value{}, err
		}
	}
}

func evalArrayToObject(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(a[0]) {
		return value.Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40386, "$arrayToObject requires an array input, found: %s", value.TypeName(a[0].Type))
	}
	m := newFieldList()
	it := value.NewIter(a[0].Data)
	for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
		var k, v bsoncore.Value
		nulCode := mongoerr.Location4940400
		switch {
		case e.Type == bsoncore.TypeArray && value.ArrayLen(e.Data) == 2:
			k, _ = value.ArrayElem(e.Data, 0)
			v, _ = value.ArrayElem(e.Data, 1)
		case e.Type == bsoncore.TypeEmbeddedDocument && value.ArrayLen(e.Data) == 2:
			var okK, okV bool
			nulCode = mongoerr.Location4940401
			k, okK = value.LookupField(e.Data, "k")
			v, okV = value.LookupField(e.Data, "v")
			if !okK || !okV {
				return bsoncore.Value{}, mongoerr.New(mongoerr.Location40393, "$arrayToObject requires an object with keys 'k' and 'v'. Missing either or both keys from: %s", value.Format(e))
			}
		default:
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40398, "Unrecognised input type format for $arrayToObject: %s", value.Format(e))
		}
		if k.Type != bsoncore.TypeString {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40394, "$arrayToObject requires a consistent input format. Expected a string key, found: %s", value.TypeName(k.Type))
		}
		if strings.IndexByte(k.StringValue(), 0) >= 0 {
			return bsoncore.Value{}, mongoerr.New(nulCode, "Key field cannot contain an embedded null byte")
		}
		if err := m.set(c, "$arrayToObject", k.StringValue(), v); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return m.value(), nil
}

// evalMergeObjects is $mergeObjects: the fields of its documents, a later
// one's value replacing an earlier one's in place.
func evalMergeObjects(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	m := newFieldList()
	for _, v := range a {
		if nullish(v) {
			continue
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %s is of type %s", value.Format(v), value.TypeName(v.Type))
		}
		it := value.NewIter(v.Data)
		for k, e, ok := it.Next(); ok; k, e, ok = it.Next() {
			if err := m.set(c, "$mergeObjects", string(k), e); err != nil {
				return bsoncore.Value{}, err
			}
		}
	}
	return m.value(), nil
}

// fieldList is a document being built whose fields may be set again (the
// value replaced, the position kept). Its index finds a field in constant
// time, where a search of the fields would make building n fields
// quadratic.
type fieldList struct {
	keys  []string
	vals  []bsoncore.Value
	index map[string]int
}

func newFieldList() *fieldList { return &fieldList{index: map[string]int{}} }

// set sets field k, counting what op's document grows by.
func (l *fieldList) set(c *evalCtx, op, k string, v bsoncore.Value) error {
	i, ok := l.index[k]
	if !ok {
		if err := c.grow(op, 1+len(k)+1+len(v.Data)); err != nil {
			return err
		}
		l.index[k] = len(l.keys)
		l.keys, l.vals = append(l.keys, k), append(l.vals, v)
		return nil
	}
	if err := c.grow(op, len(v.Data)-len(l.vals[i].Data)); err != nil {
		return err
	}
	l.vals[i] = v
	return nil
}

func (l *fieldList) value() bsoncore.Value {
	at, dst := bsoncore.AppendDocumentStart(nil)
	for i, k := range l.keys {
		dst = bsoncore.AppendValueElement(dst, k, l.vals[i])
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, at)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dst}
}
