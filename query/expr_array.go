package query

import (
	"encoding/binary"
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Array expressions.

func evalSize(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if a[0].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location17124, "The argument to $size must be an array. Type of argument: %s", exprTypeName(a[0]))
	}
	return value.Int32(int32(value.ArrayLen(a[0].Data))), nil
}

func evalArrayElemAt(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	arr, idx := a[0], a[1]
	switch {
	case nullish(arr) || nullish(idx):
		return value.Null, nil
	case arr.Type != bsoncore.TypeArray:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28689, "$arrayElemAt's first argument must be an array, but is %s", value.TypeName(arr.Type))
	case !value.IsNumber(idx):
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28690, "$arrayElemAt's second argument must be a numeric value, but is %s", value.TypeName(idx.Type))
	}
	f := value.ToFloat(idx)
	if f != math.Trunc(f) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28691, "$arrayElemAt's second argument must be representable as a 32-bit integer: %s", value.FormatNumber(idx))
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
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location28689, "%s's argument must be an array, but is %s", name, value.TypeName(a[0].Type))
		}
		return elemAt(a[0], i), nil
	}
}

func evalConcatArrays(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	for _, v := range a {
		switch {
		case nullish(v):
			return value.Null, nil
		case v.Type != bsoncore.TypeArray:
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location28664, "$concatArrays only supports arrays, not %s", value.TypeName(v.Type))
		}
	}
	out := newArrayBuilder(c, "$concatArrays")
	for _, v := range a {
		it := value.NewIter(v.Data)
		for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
			if err := out.add(e); err != nil {
				return bsoncore.Value{}, err
			}
		}
	}
	return out.value(), nil
}

func evalReverseArray(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	switch {
	case nullish(a[0]):
		return value.Null, nil
	case a[0].Type != bsoncore.TypeArray:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location34435, "The argument to $reverseArray must be an array, but was of type: %s", value.TypeName(a[0].Type))
	}
	vals := value.ArrayValues(a[0].Data)
	out := newArrayBuilder(c, "$reverseArray")
	for i := len(vals) - 1; i >= 0; i-- {
		if err := out.add(vals[i]); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return out.value(), nil
}

// mapFilterExpr is $map ({input, as, in}) and $filter ({input, as, cond}).
type mapFilterExpr struct {
	name      string
	input, fn Expr
	as        string
}

func compileMapFilter(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16878, "%s only supports an object as its argument", name)
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
			return nil, mongoerr.New(mongoerr.Location16879, "Unrecognized parameter to %s: %s", name, key)
		}
	}
	if input.Type == 0 || fn.Type == 0 {
		return nil, mongoerr.New(mongoerr.Location16880, "Missing 'input' or '%s' parameter to %s", body, name)
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

// eval holds the input and the output built so far; what the body builds
// for one element is garbage once copied into the output (release).
func (e *mapFilterExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	m := c.mark()
	in, err := e.input.eval(c)
	switch {
	case err != nil:
		return in, err
	case nullish(in):
		return value.Null, nil
	case in.Type != bsoncore.TypeArray:
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28651, "input to %s must be an array not %s", e.name, value.TypeName(in.Type))
	}
	out := newArrayBuilder(c, e.name)
	it := value.NewIter(in.Data)
	for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
		if err := c.step(bodyWork); err != nil {
			return bsoncore.Value{}, err
		}
		before := c.mark()
		r, err := e.fn.eval(c.bind(e.as, v))
		if err != nil {
			return r, err
		}
		c.release(before)
		switch {
		case e.name == "$filter" && exprTruthy(r):
			err = out.add(v)
		case e.name == "$map":
			err = out.add(r)
		}
		if err != nil {
			return bsoncore.Value{}, err
		}
	}
	res := out.value()
	return res, c.keep(e.name, m, res)
}

type reduceExpr struct{ input, initial, in Expr }

func compileReduce(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40075, "$reduce requires an object as an argument, found: %s", value.TypeName(arg.Type))
	}
	e := &reduceExpr{}
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		var err error
		switch string(k) {
		case "input":
			e.input, err = compileExpr(v, s)
		case "initialValue":
			e.initial, err = compileExpr(v, s)
		case "in":
			e.in, err = compileExpr(v, s.with("value").with("this"))
		default:
			err = mongoerr.New(mongoerr.Location40076, "$reduce found an unknown argument: %s", k)
		}
		if err != nil {
			return nil, err
		}
	}
	if e.input == nil || e.initial == nil || e.in == nil {
		return nil, mongoerr.New(mongoerr.Location40077, "$reduce requires 'input', 'initialValue' and 'in' to be specified")
	}
	return e, nil
}

// eval holds the input and the latest accumulated value: each step's
// temporaries and the accumulators it replaced are garbage (keep).
func (e *reduceExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	m := c.mark()
	in, err := e.input.eval(c)
	if err != nil || nullish(in) {
		return value.Null, err
	}
	if in.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40080, "$reduce requires that 'input' be an array, found: %s", value.Format(in))
	}
	withInput := c.mark()
	acc, err := e.initial.eval(c)
	if err != nil {
		return acc, err
	}
	it := value.NewIter(in.Data)
	for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
		if err := c.step(bodyWork); err != nil {
			return bsoncore.Value{}, err
		}
		if acc, err = e.in.eval(c.bind("value", acc).bind("this", v)); err != nil {
			return acc, err
		}
		if err := c.keep("$reduce", withInput, acc); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return acc, c.keep("$reduce", m, acc)
}

func evalZip(c *evalCtx, a namedArgs) (bsoncore.Value, error) {
	inputs := a["inputs"]
	if nullish(inputs) {
		return value.Null, nil
	}
	if inputs.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location34461, "inputs must be an array of expressions, found %s", value.TypeName(inputs.Type))
	}
	longest := exprTruthy(a["useLongestLength"])
	var defaults []bsoncore.Value
	if d, ok := a["defaults"]; ok && !nullish(d) {
		if !longest {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location34466, "cannot specify defaults unless useLongestLength is true")
		}
		defaults = value.ArrayValues(d.Data)
	}
	var arrays [][]bsoncore.Value
	n := -1
	for _, in := range value.ArrayValues(inputs.Data) {
		if nullish(in) {
			return value.Null, nil
		}
		if in.Type != bsoncore.TypeArray {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location34468, "$zip found a non-array expression in input: %s", value.Format(in))
		}
		vals := value.ArrayValues(in.Data)
		arrays = append(arrays, vals)
		switch {
		case n < 0:
			n = len(vals)
		case longest:
			n = max(n, len(vals))
		default:
			n = min(n, len(vals))
		}
	}
	if defaults != nil && len(defaults) != len(arrays) {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location34467, "defaults and inputs must have the same length")
	}
	out := newArrayBuilder(c, "$zip")
	for i := 0; i < n; i++ {
		// The row counts while it is built, then as its copy in the
		// output.
		m := c.mark()
		row := newArrayBuilder(c, "$zip")
		for j, arr := range arrays {
			v := value.Null
			switch {
			case i < len(arr):
				v = arr[i]
			case defaults != nil:
				v = defaults[j]
			}
			if err := row.add(v); err != nil {
				return bsoncore.Value{}, err
			}
		}
		c.release(m)
		if err := out.add(row.value()); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return out.value(), nil
}

type sortArrayExpr struct {
	input  Expr
	byDoc  *Sort // sortBy a document of fields
	desc   bool  // sortBy 1 / -1 on the whole values
	simple bool
}

func compileSortArray(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location2942500, "$sortArray requires an object as an argument, found: %s", value.TypeName(arg.Type))
	}
	e := &sortArrayExpr{}
	var by bsoncore.Value
	err := value.EachField(arg.Data, func(k string, v bsoncore.Value) (err error) {
		switch k {
		case "input":
			e.input, err = compileExpr(v, s)
		case "sortBy":
			by = v
		default:
			err = mongoerr.New(mongoerr.Location2942501, "$sortArray found an unknown argument: %s", k)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	switch {
	case e.input == nil:
		return nil, mongoerr.New(mongoerr.Location2942502, "$sortArray requires 'input' to be specified")
	case by.Type == 0:
		return nil, mongoerr.New(mongoerr.Location2942503, "$sortArray requires 'sortBy' to be specified")
	case value.IsNumber(by) && (value.ToFloat(by) == 1 || value.ToFloat(by) == -1):
		e.simple, e.desc = true, value.ToFloat(by) < 0
	case by.Type == bsoncore.TypeEmbeddedDocument:
		srt, err := CompileSort(by.Data)
		if err != nil {
			return nil, err
		}
		e.byDoc = srt
	default:
		return nil, mongoerr.New(mongoerr.Location2942504, "$sortArray requires 'sortBy' to be 1, -1 or a sort specification")
	}
	return e, nil
}

func (e *sortArrayExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	in, err := e.input.eval(c)
	if err != nil || nullish(in) {
		return value.Null, err
	}
	if in.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location2942505, "The input argument to $sortArray must be an array, but was of type: %s", value.TypeName(in.Type))
	}
	vals := value.ArrayValues(in.Data)
	coll := c.env.coll()
	// A comparator cannot fail, so once the context is done it answers at
	// once and the sort, whose order no longer matters, ends soon.
	var stop error
	sort.SliceStable(vals, func(i, j int) bool {
		if stop != nil {
			return false
		}
		if stop = c.step(stepWork); stop != nil {
			return false
		}
		if e.simple {
			r := value.CompareWith(vals[i], vals[j], coll)
			if e.desc {
				r = -r
			}
			return r < 0
		}
		// Non-documents sort as if their fields were missing.
		return e.byDoc.Compare(docOrEmpty(vals[i]), docOrEmpty(vals[j])) < 0
	})
	if stop != nil {
		return bsoncore.Value{}, stop
	}
	out := newArrayBuilder(c, "$sortArray")
	for _, v := range vals {
		if err := out.add(v); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return out.value(), nil
}

// int32Arg reads an argument that must be a whole number in int32 range.
func int32Arg(name, what string, v bsoncore.Value, code mongoerr.Code) (int, error) {
	if !value.IsNumber(v) || value.ToFloat(v) != math.Trunc(value.ToFloat(v)) || math.Abs(value.ToFloat(v)) > math.MaxInt32 {
		return 0, mongoerr.New(code, "%s requires %s to be a 32-bit integer, found: %s", name, what, value.Format(v))
	}
	return int(value.ToFloat(v)), nil
}

func evalRange(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	start, err := int32Arg("$range", "a starting value", a[0], mongoerr.Location34443)
	if err != nil {
		return bsoncore.Value{}, err
	}
	end, err := int32Arg("$range", "an ending value", a[1], mongoerr.Location34445)
	if err != nil {
		return bsoncore.Value{}, err
	}
	step := 1
	if len(a) == 3 {
		if step, err = int32Arg("$range", "a step value", a[2], mongoerr.Location34447); err != nil {
			return bsoncore.Value{}, err
		}
		if step == 0 {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location34449, "$range requires a non-zero step value")
		}
	}
	if need, limit := rangeBytes(start, end, step), c.budgetOf().limit; need >= limit {
		return bsoncore.Value{}, mongoerr.New(mongoerr.ExceededMemoryLimit, "$range would use too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes", need, limit)
	}
	out := newArrayBuilder(c, "$range")
	var n [4]byte
	for i := start; (step > 0 && i < end) || (step < 0 && i > end); i += step {
		binary.LittleEndian.PutUint32(n[:], uint32(int32(i)))
		if err := out.add(bsoncore.Value{Type: bsoncore.TypeInt32, Data: n[:]}); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return out.value(), nil
}

// rangeBytes is the memory mongod reckons a $range needs, before
// building it: rangeElemBytes per element.
func rangeBytes(start, end, step int) int64 {
	n := (int64(end) - int64(start)) / int64(step)
	if n < 0 {
		return 0
	}
	return (n + 1) * rangeElemBytes
}

func evalIndexOfArray(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(a[0]) {
		return value.Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40090, "$indexOfArray requires an array as a first argument, found: %s", value.TypeName(a[0].Type))
	}
	vals := value.ArrayValues(a[0].Data)
	start, end, err := indexBounds("$indexOfArray", a[2:], len(vals))
	if err != nil {
		return bsoncore.Value{}, err
	}
	for i := start; i < end; i++ {
		if err := c.step(stepWork); err != nil {
			return bsoncore.Value{}, err
		}
		if exprCompare(c, vals[i], a[1]) == 0 {
			return value.Int32(int32(i)), nil
		}
	}
	return value.Int32(-1), nil
}

func evalSlice(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if nullish(a[0]) {
		return value.Null, nil
	}
	if a[0].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28724, "First argument to $slice must be an array, but is of type: %s", value.TypeName(a[0].Type))
	}
	for _, v := range a[1:] {
		if nullish(v) {
			return value.Null, nil
		}
	}
	vals := value.ArrayValues(a[0].Data)
	n := len(vals)
	first, err := int32Arg("$slice", "the second argument", a[1], mongoerr.Location28725)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if len(a) == 2 {
		if first >= 0 {
			return value.BuildArray(vals[:min(first, n)]), nil
		}
		return value.BuildArray(vals[max(0, n+first):]), nil
	}
	count, err := int32Arg("$slice", "the third argument", a[2], mongoerr.Location28727)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if count <= 0 {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location28729, "Third argument to $slice must be positive: %d", count)
	}
	start := first
	if start < 0 {
		start = max(0, n+start)
	}
	start = min(start, n)
	return value.BuildArray(vals[start:min(n, start+count)]), nil
}
