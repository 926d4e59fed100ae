package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// Array expressions.

func evalSize(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if a[0].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(17124), "The argument to $size must be an array. Type of argument: %s", exprTypeName(a[0]))
	}
	return value.Int32(int32(value.ArrayLen(a[0].Data))), nil
}

func evalArrayElemAt(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	arr, idx := a[0], a[1]
	switch {
	case nullish(arr) || nullish(idx):
		return value.Null, nil
	case arr.Type != bsoncore.TypeArray:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28689), "$arrayElemAt's first argument must be an array, but is %s", value.TypeName(arr.Type))
	case !value.IsNumber(idx):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28690), "$arrayElemAt's second argument must be a numeric value, but is %s", value.TypeName(idx.Type))
	}
	f := value.ToFloat(idx)
	if f != math.Trunc(f) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28691), "$arrayElemAt's second argument must be representable as a 32-bit integer: %s", value.FormatNumber(idx))
	}
	return elemAt(arr, int(f)), nil
}

// elemAt indexes an array from the front, or from the back when negative;
// out of range is missing.
func elemAt(arr bsoncore.Value, i int) bsoncore.Value {
	if i < 0 {
		i += value.ArrayLen(arr.Data)
		if i < 0 {
			return bsoncore.Value{}
		}
	}
	v, _ := value.ArrayElem(arr.Data, i)
	return v
}

func evalIsArray(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	return value.Bool(a[0].Type == bsoncore.TypeArray), nil
}

func firstLast(name string, i int) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		switch {
		case nullish(a[0]):
			return value.Null, nil
		case a[0].Type != bsoncore.TypeArray:
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28689), "%s's argument must be an array, but is %s", name, value.TypeName(a[0].Type))
		}
		return elemAt(a[0], i), nil
	}
}

func evalConcatArrays(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	var out []bsoncore.Value
	for _, v := range a {
		switch {
		case nullish(v):
			return value.Null, nil
		case v.Type != bsoncore.TypeArray:
			return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28664), "$concatArrays only supports arrays, not %s", value.TypeName(v.Type))
		}
		out = append(out, value.ArrayValues(v.Data)...)
	}
	return value.BuildArray(out), nil
}

func evalReverseArray(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case nullish(a[0]):
		return value.Null, nil
	case a[0].Type != bsoncore.TypeArray:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(34435), "The argument to $reverseArray must be an array, but was of type: %s", value.TypeName(a[0].Type))
	}
	vals := value.ArrayValues(a[0].Data)
	for i, j := 0, len(vals)-1; i < j; i, j = i+1, j-1 {
		vals[i], vals[j] = vals[j], vals[i]
	}
	return value.BuildArray(vals), nil
}

// mapFilterExpr is $map ({input, as, in}) and $filter ({input, as, cond}).
type mapFilterExpr struct {
	name      string
	input, fn Expr
	as        string
}

func compileMapFilter(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Code(16878), "%s only supports an object as its argument", name)
	}
	body := "in"
	if name == "$filter" {
		body = "cond"
	}
	e := &mapFilterExpr{name: name, as: "this"}
	var input, fn bsoncore.Value
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch key := string(k); {
		case key == "input":
			input = v
		case key == "as":
			if v.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.FailedToParse, "%s 'as' must be a string", name)
			}
			e.as = v.StringValue()
		case key == body:
			fn = v
		default:
			return nil, mongoerr.New(mongoerr.Code(16879), "Unrecognized parameter to %s: %s", name, key)
		}
	}
	if input.Type == 0 || fn.Type == 0 {
		return nil, mongoerr.New(mongoerr.Code(16880), "Missing 'input' or '%s' parameter to %s", body, name)
	}
	if err := validateVarName(e.as); err != nil {
		return nil, err
	}
	var err error
	if e.input, err = compileExpr(input, s); err != nil {
		return nil, err
	}
	if e.fn, err = compileExpr(fn, s.with(e.as)); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *mapFilterExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	in, err := e.input.eval(c)
	switch {
	case err != nil:
		return in, err
	case nullish(in):
		return value.Null, nil
	case in.Type != bsoncore.TypeArray:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Code(28651), "input to %s must be an array not %s", e.name, value.TypeName(in.Type))
	}
	var out []bsoncore.Value
	for _, v := range value.ArrayValues(in.Data) {
		r, err := e.fn.eval(c.bind(e.as, v))
		if err != nil {
			return r, err
		}
		switch {
		case e.name == "$filter" && exprTruthy(r):
			out = append(out, v)
		case e.name == "$map" && r.Type == 0:
			out = append(out, value.Null)
		case e.name == "$map":
			out = append(out, r)
		}
	}
	return value.BuildArray(out), nil
}
