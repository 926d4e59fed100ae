package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// Object expressions: $getField and $setField read and write fields whose
// names contain '.' or start with '$', which field paths cannot name;
// $objectToArray and $arrayToObject turn documents into [{k, v}] arrays
// and back. ($mergeObjects is an accumulator, acc_basic.go.)

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

func evalObjectToArray(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(a[0]) {
		return value.Null, nil
	}
	if a[0].Type != bsoncore.TypeEmbeddedDocument {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40390, "$objectToArray requires a document input, found: %s", value.TypeName(a[0].Type))
	}
	var out []bsoncore.Value
	it := value.NewIter(a[0].Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			return value.BuildArray(out), nil
		}
		d := bsoncore.NewDocumentBuilder().AppendString("k", string(k)).AppendValue("v", v).Build()
		out = append(out, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
	}
}

func evalArrayToObject(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(a[0]) {
		return value.Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40386, "$arrayToObject requires an array input, found: %s", value.TypeName(a[0].Type))
	}
	m := newDocM()
	for _, e := range value.ArrayValues(a[0].Data) {
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
		m.setChild(k.StringValue(), leafM(v))
	}
	return m.value(), nil
}
