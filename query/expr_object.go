package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// Object expressions: $getField and $setField read and write fields whose
// names contain '.' or start with '$', which field paths cannot name.

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
			return nil, mongoerr.New(mongoerr.Code(4161100), "$setField only supports an object as its argument")
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
			return nil, mongoerr.New(mongoerr.Code(3041701), "%s found an unknown argument: %s", name, k)
		}
	}
	switch {
	case e.field == nil:
		return nil, mongoerr.New(mongoerr.Code(3041702), "%s requires 'field' to be specified", name)
	case name == "$setField" && !hasValue:
		return nil, mongoerr.New(mongoerr.Code(4161102), "$setField requires 'value' to be specified")
	}
	return e, nil
}

func (e *fieldAccessExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	f, err := e.field.eval(c)
	if err != nil {
		return f, err
	}
	if f.Type != bsoncore.TypeString {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(3041704), "%s requires 'field' to evaluate to type String, but got %s", e.name, exprTypeName(f))
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
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(4161105), "$setField requires 'input' to evaluate to type Object")
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
