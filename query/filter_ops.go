package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// fieldOp compiles one field operator's argument into an opNode.
type fieldOp func(f *Filter, path string, arg bsoncore.Value) (opNode, error)

// parseOps compiles an operator document such as {$gt: 1, $lt: 5}; the
// operators are ANDed, each independently matching any reached value.
func (f *Filter) parseOps(path string, ops []byte) (opNode, error) {
	f.opsDepth++
	defer func() { f.opsDepth-- }()
	var out opAnd
	re, err := parseRegexPair(ops)
	if err != nil {
		return nil, err
	}
	if re != nil {
		out = append(out, leafNode{re})
	}
	if !f.validator && !f.noNear {
		near, err := f.parseNearOps(path, ops)
		if err != nil {
			return nil, err
		}
		if near != nil {
			out = append(out, near)
		}
	}
	it := value.NewIter(ops)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		name := string(k)
		row, known := fieldOps[name]
		switch {
		case (f.validator || f.noNear) && nearOps[name]:
			return nil, nearNotAllowed()
		case !known:
			return nil, mongoerr.New(mongoerr.BadValue, "unknown operator: %s", name)
		case row.refuse != nil:
			return nil, row.refuse(name)
		case row.parse == nil: // $regex and $options, $near and its bounds: read above
			continue
		}
		n, err := row.parse(f, path, v)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

// parseRegexPair reads $regex and $options, which form one predicate.
func parseRegexPair(ops []byte) (*regexLeaf, error) {
	rv, hasRe := value.LookupField(ops, "$regex")
	ov, hasOpts := value.LookupField(ops, "$options")
	if !hasRe {
		if hasOpts {
			return nil, mongoerr.New(mongoerr.BadValue, "$options needs a $regex")
		}
		return nil, nil
	}
	opts := ""
	if hasOpts {
		if ov.Type != bsoncore.TypeString {
			return nil, mongoerr.New(mongoerr.BadValue, "$options has to be a string")
		}
		opts = ov.StringValue()
	}
	switch rv.Type {
	case bsoncore.TypeString:
		return newRegexLeaf(rv.StringValue(), opts)
	case bsoncore.TypeRegex:
		p, o := rv.Regex()
		if hasOpts && o != "" {
			return nil, mongoerr.New(mongoerr.Location51075, "options set in both $regex and $options")
		}
		if o == "" {
			o = opts
		}
		return newRegexLeaf(p, o)
	}
	return nil, mongoerr.New(mongoerr.BadValue, "$regex has to be a string")
}

// eqLeaf is MongoDB equality: null also matches a missing field.
type eqLeaf struct {
	v    bsoncore.Value
	coll *value.Collation
}

func (e eqLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k == value.KindMissing {
		return e.v.Type == bsoncore.TypeNull
	}
	return value.CompareWith(v, e.v, e.coll) == 0
}

func parseEq(f *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	return leafNode{eqLeaf{arg, f.env.coll()}}, nil
}

func parseNe(f *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	if arg.Type == bsoncore.TypeRegex {
		return nil, mongoerr.New(mongoerr.BadValue, "Can't have regex as arg to $ne.")
	}
	return opNot{leafNode{eqLeaf{arg, f.env.coll()}}}, nil
}

type cmpOp uint8

const (
	opLT cmpOp = iota
	opLTE
	opGT
	opGTE
)

// cmpLeaf is $lt/$lte/$gt/$gte. Values only compare within the operand's
// canonical type class ("type bracketing"), except against MinKey/MaxKey.
type cmpLeaf struct {
	op   cmpOp
	v    bsoncore.Value
	nan  bool
	coll *value.Collation
}

func (c cmpLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k == value.KindMissing {
		v = value.Null
	}
	if value.CanonicalType(v.Type) != value.CanonicalType(c.v.Type) &&
		c.v.Type != bsoncore.TypeMinKey && c.v.Type != bsoncore.TypeMaxKey {
		return false
	}
	// NaN only matches NaN, and only via the inclusive operators.
	if c.nan || (v.Type == bsoncore.TypeDouble && math.IsNaN(v.Double())) ||
		(v.Type == bsoncore.TypeDecimal128 && value.ExactNumber(v).NaN) {
		if !c.nan || value.CanonicalType(v.Type) != value.ClassNumber {
			return false
		}
		return (c.op == opLTE || c.op == opGTE) && value.ExactNumber(v).NaN
	}
	r := value.CompareWith(v, c.v, c.coll)
	switch c.op {
	case opLT:
		return r < 0
	case opLTE:
		return r <= 0
	case opGT:
		return r > 0
	}
	return r >= 0
}

func cmpParser(op cmpOp) fieldOp {
	return func(f *Filter, path string, arg bsoncore.Value) (opNode, error) {
		if arg.Type == bsoncore.TypeRegex {
			return nil, mongoerr.New(mongoerr.BadValue, "Can't have RegEx as arg to predicate over field '%s'.", path)
		}
		nan := value.IsNumber(arg) && value.ExactNumber(arg).NaN
		return leafNode{cmpLeaf{op: op, v: arg, nan: nan, coll: f.env.coll()}}, nil
	}
}

// inLeaf is $in: equality with any listed value, or a match of any regex.
type inLeaf struct {
	coll    *value.Collation
	vals    []bsoncore.Value
	regexes []*regexLeaf
	hasNull bool
}

func (in *inLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k == value.KindMissing {
		return in.hasNull
	}
	for _, x := range in.vals {
		if value.CompareWith(v, x, in.coll) == 0 {
			return true
		}
	}
	for _, r := range in.regexes {
		if r.matchValue(v, k) {
			return true
		}
	}
	return false
}

func newInLeaf(f *Filter, name string, arg bsoncore.Value) (*inLeaf, error) {
	if arg.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.BadValue, "%s needs an array", name)
	}
	in := &inLeaf{coll: f.env.coll()}
	for _, e := range value.ArrayValues(arg.Data) {
		switch {
		case e.Type == bsoncore.TypeRegex:
			r, err := regexLeafFromValue(e)
			if err != nil {
				return nil, err
			}
			in.regexes = append(in.regexes, r)
		case value.IsOperatorDoc(e) && !isDBRef(e):
			return nil, mongoerr.New(mongoerr.BadValue, "cannot nest $ under %s", name)
		default:
			in.hasNull = in.hasNull || e.Type == bsoncore.TypeNull
			in.vals = append(in.vals, e)
		}
	}
	return in, nil
}

func parseIn(f *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	in, err := newInLeaf(f, "$in", arg)
	if err != nil {
		return nil, err
	}
	return leafNode{in}, nil
}

func parseNin(f *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	in, err := newInLeaf(f, "$nin", arg)
	if err != nil {
		return nil, err
	}
	return opNot{leafNode{in}}, nil
}

// existsLeaf matches any value that is present.
type existsLeaf struct{}

func (existsLeaf) matchValue(_ bsoncore.Value, k value.VisitKind) bool { return k != value.KindMissing }

func parseExists(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	if value.Truthy(arg) {
		return leafNode{existsLeaf{}}, nil
	}
	return opNot{leafNode{existsLeaf{}}}, nil
}

// typeAliases maps $type names to BSON type numbers; "number" is special.
var typeAliases = map[string]int{
	"double": 1, "string": 2, "object": 3, "array": 4, "binData": 5, "undefined": 6,
	"objectId": 7, "bool": 8, "date": 9, "null": 10, "regex": 11, "dbPointer": 12,
	"javascript": 13, "symbol": 14, "javascriptWithScope": 15, "int": 16,
	"timestamp": 17, "long": 18, "decimal": 19, "minKey": -1, "maxKey": 127,
}

const typeNumber = 1000 // pseudo type code for the "number" alias

// typeLeaf is $type with one or more type codes.
type typeLeaf struct{ types []int }

func (t typeLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k == value.KindMissing {
		return false
	}
	code := int(int8(v.Type)) // MinKey 0xFF is -1
	if v.Type == bsoncore.TypeMaxKey {
		code = 127
	}
	for _, want := range t.types {
		if want == code || (want == typeNumber && value.IsNumber(v)) {
			return true
		}
	}
	return false
}

func parseType(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	args := []bsoncore.Value{arg}
	if arg.Type == bsoncore.TypeArray {
		args = value.ArrayValues(arg.Data)
	}
	var tl typeLeaf
	for _, a := range args {
		code, err := parseTypeCode(a)
		if err != nil {
			return nil, err
		}
		tl.types = append(tl.types, code)
	}
	return leafNode{tl}, nil
}

func parseTypeCode(a bsoncore.Value) (int, error) {
	if a.Type == bsoncore.TypeString {
		s := a.StringValue()
		if s == "number" {
			return typeNumber, nil
		}
		if c, ok := typeAliases[s]; ok {
			return c, nil
		}
		return 0, mongoerr.New(mongoerr.BadValue, "Unknown type name alias: %s", s)
	}
	if !value.IsNumber(a) {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "type must be represented as a number or a string")
	}
	f := value.ToFloat(a)
	c := int(f)
	if float64(c) != f {
		return 0, mongoerr.New(mongoerr.BadValue, "Invalid numerical type code: %s", value.FormatNumber(a))
	}
	for _, known := range typeAliases {
		if known == c {
			return c, nil
		}
	}
	return 0, mongoerr.New(mongoerr.BadValue, "Invalid numerical type code: %d", c)
}

// sizeLeaf is $size: whole arrays of exactly n elements.
type sizeLeaf struct{ n int }

func (s sizeLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	return k == value.KindValue && v.Type == bsoncore.TypeArray && value.ArrayLen(v.Data) == s.n
}

func parseSize(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	if !value.IsNumber(arg) {
		return nil, mongoerr.New(mongoerr.BadValue, "$size needs a number")
	}
	f := value.ToFloat(arg)
	if f != math.Trunc(f) || math.IsNaN(f) {
		return nil, mongoerr.New(mongoerr.BadValue, "$size must be a whole number")
	}
	if f < 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "$size may not be negative")
	}
	if f > math.MaxInt32 {
		return leafNode{sizeLeaf{-1}}, nil // no array is that long
	}
	return leafNode{sizeLeaf{int(f)}}, nil
}

// parseAll compiles $all as the AND of one equality (or regex, or
// $elemMatch) per listed value; an empty list matches nothing.
func parseAll(f *Filter, path string, arg bsoncore.Value) (opNode, error) {
	if arg.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.BadValue, "$all needs an array")
	}
	vals := value.ArrayValues(arg.Data)
	if len(vals) == 0 {
		return leafNode{neverLeaf{}}, nil
	}
	elemMatch := isElemMatchDoc(vals[0])
	var out opAnd
	for _, v := range vals {
		if isElemMatchDoc(v) != elemMatch {
			return nil, mongoerr.New(mongoerr.BadValue, "$all/$elemMatch has to be consistent")
		}
		switch {
		case elemMatch:
			em, _ := value.LookupField(v.Data, "$elemMatch")
			n, err := parseElemMatch(f, path, em)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		case v.Type == bsoncore.TypeRegex:
			r, err := regexLeafFromValue(v)
			if err != nil {
				return nil, err
			}
			out = append(out, leafNode{r})
		case value.IsOperatorDoc(v) && !isDBRef(v):
			return nil, mongoerr.New(mongoerr.BadValue, "no $ expressions in $all")
		default:
			out = append(out, leafNode{eqLeaf{v, f.env.coll()}})
		}
	}
	return out, nil
}

func isElemMatchDoc(v bsoncore.Value) bool {
	return v.Type == bsoncore.TypeEmbeddedDocument && value.FirstKey(v.Data) == "$elemMatch"
}

type neverLeaf struct{}

func (neverLeaf) matchValue(bsoncore.Value, value.VisitKind) bool { return false }

// elemMatchLeaf matches a whole array with at least one element satisfying
// either a filter (object form) or an operator tree (value form).
type elemMatchLeaf struct {
	obj docExpr // {$elemMatch: {b: 1}}: elements must be documents/arrays
	val opNode  // {$elemMatch: {$gt: 1}}: each element as a single value
}

func (em *elemMatchLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k != value.KindValue || v.Type != bsoncore.TypeArray {
		return false
	}
	it := value.NewIter(v.Data)
	for {
		_, e, ok := it.Next()
		if !ok {
			return false
		}
		if em.matchElem(e) {
			return true
		}
	}
}

func (em *elemMatchLeaf) matchElem(e bsoncore.Value) bool {
	if em.val != nil {
		return em.val.eval(source{single: e})
	}
	if e.Type != bsoncore.TypeEmbeddedDocument && e.Type != bsoncore.TypeArray {
		return false
	}
	return em.obj.matchDoc(e.Data)
}

func newElemMatch(parent *Filter, path string, arg bsoncore.Value) (*elemMatchLeaf, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.BadValue, "$elemMatch needs an Object")
	}
	if value.IsOperatorDoc(arg) && !dbRefDoc(arg.Data, true) {
		switch value.FirstKey(arg.Data) {
		case "$and", "$or", "$nor", "$where", "$expr", "$comment", "$alwaysTrue", "$alwaysFalse":
		default:
			n, err := parent.parseOps(path, arg.Data)
			if err != nil {
				return nil, err
			}
			return &elemMatchLeaf{val: n}, nil
		}
	}
	f := &Filter{env: parent.env, validator: parent.validator}
	obj, err := f.parseDoc(arg.Data, false)
	if err != nil {
		return nil, err
	}
	return &elemMatchLeaf{obj: obj}, nil
}

func parseElemMatch(f *Filter, path string, arg bsoncore.Value) (opNode, error) {
	em, err := newElemMatch(f, path, arg)
	if err != nil {
		return nil, err
	}
	return leafNode{em}, nil
}

// modLeaf is $mod: numbers truncated to integers, dividend % divisor == remainder.
type modLeaf struct{ divisor, remainder int64 }

func (m modLeaf) matchValue(v bsoncore.Value, k value.VisitKind) bool {
	if k == value.KindMissing || !value.IsNumber(v) {
		return false
	}
	f := value.ToFloat(v)
	if v.Type == bsoncore.TypeInt64 || v.Type == bsoncore.TypeInt32 {
		return v.AsInt64()%m.divisor == m.remainder
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return false
	}
	return int64(f)%m.divisor == m.remainder
}

func parseMod(_ *Filter, _ string, arg bsoncore.Value) (opNode, error) {
	if arg.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, needs to be an array")
	}
	vals := value.ArrayValues(arg.Data)
	switch {
	case len(vals) < 2:
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, not enough elements")
	case len(vals) > 2:
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, too many elements")
	case !value.IsNumber(vals[0]):
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, divisor not a number")
	case !value.IsNumber(vals[1]):
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, remainder not a number")
	}
	d, r := value.ToFloat(vals[0]), value.ToFloat(vals[1])
	if math.IsNaN(d) || math.IsInf(d, 0) || math.IsNaN(r) || math.IsInf(r, 0) {
		return nil, mongoerr.New(mongoerr.BadValue, "malformed mod, divisor value is invalid :: caused by :: Unable to coerce NaN/Inf to integral type")
	}
	div := truncInt(vals[0])
	if div == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "divisor cannot be 0")
	}
	return leafNode{modLeaf{divisor: div, remainder: truncInt(vals[1])}}, nil
}

func truncInt(v bsoncore.Value) int64 {
	if v.Type == bsoncore.TypeInt32 || v.Type == bsoncore.TypeInt64 {
		return v.AsInt64()
	}
	return int64(value.ToFloat(v))
}

// parseNot negates a regex or an operator document.
func parseNot(f *Filter, path string, arg bsoncore.Value) (opNode, error) {
	switch arg.Type {
	case bsoncore.TypeRegex:
		r, err := regexLeafFromValue(arg)
		if err != nil {
			return nil, err
		}
		return opNot{leafNode{r}}, nil
	case bsoncore.TypeEmbeddedDocument:
		if len(arg.Data) <= 5 {
			return nil, mongoerr.New(mongoerr.BadValue, "$not cannot be empty")
		}
		if !value.IsOperatorDoc(arg) {
			return nil, mongoerr.New(mongoerr.BadValue, "unknown operator: %s", value.FirstKey(arg.Data))
		}
		n, err := f.parseOps(path, arg.Data)
		if err != nil {
			return nil, err
		}
		return opNot{n}, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "$not needs a regex or a document")
}
