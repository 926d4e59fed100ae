package query

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The details of a failed validation, as mongod 5+ reports them in
// errInfo.details (doc_validation_error.cpp): which clauses of the
// validator failed and why. The explainer walks the validator document
// rather than the compiled filter, and compiles each clause again to learn
// whether it matched: this runs only for a document that failed, and it
// keeps the matcher free of bookkeeping. Under a negation ($not, $nor) the
// explanation is inverted: it says why a clause matched.

// explainer explains failures under one query environment.
type explainer struct{ env *Env }

// clause is one predicate of a validator as mongod's error tree has it: a
// logical operator over sub-filters, a $not over a path's operators, a
// top-level operator ($expr, $jsonSchema, ...) or a path leaf.
type clause struct {
	op   string            // $and, $not, $eq, $jsonSchema, ...
	path string            // leaves and $not
	arg  bsoncore.Value    // the operator's argument
	src  bsoncore.Document // the clause as a filter: specifiedAs, and what decides whether it matched
	// negated leaves ($ne, $nin, $exists: false) are explained as their
	// positive operator with the reason inverted, as mongod does.
	negated bool
}

// filterDoc explains a filter document (several clauses are an implicit
// $and); nil means it has nothing to say (the filter did not fail).
func (x *explainer) filterDoc(filter, doc []byte, inv bool) bsoncore.Document {
	return x.clauses(clausesOf(filter), doc, inv)
}

// clauses explains a list of clauses: one alone, or their implicit $and.
func (x *explainer) clauses(cs []clause, doc []byte, inv bool) bsoncore.Document {
	if len(cs) == 1 {
		return x.explain(cs[0], doc, inv)
	}
	return x.logical("$and", cs, doc, inv)
}

// clausesOf splits a filter document into its clauses, in order.
func clausesOf(filter []byte) []clause {
	var out []clause
	it := value.NewIter(filter)
	for k, v, ok := it.Next(); ok; k, v, ok = it.Next() {
		key := string(k)
		switch {
		case key == "$comment":
		case len(key) > 0 && key[0] == '$':
			out = append(out, clause{op: key, arg: v, src: single(key, v)})
		default:
			out = append(out, pathClauses(key, v)...)
		}
	}
	return out
}

// pathClauses splits {path: v} into one clause per operator.
func pathClauses(path string, v bsoncore.Value) []clause {
	switch {
	case v.Type == bsoncore.TypeRegex:
		return []clause{{op: "$regex", path: path, arg: v, src: single(path, v)}}
	case !value.IsOperatorDoc(v) || isDBRef(v):
		return []clause{{op: "$eq", path: path, arg: v, src: single(path, v)}}
	}
	var out []clause
	regexDone := false
	it := value.NewIter(v.Data)
	for k, arg, ok := it.Next(); ok; k, arg, ok = it.Next() {
		name := string(k)
		switch name {
		case "$regex", "$options":
			if !regexDone {
				regexDone = true
				out = append(out, clause{op: "$regex", path: path, src: single(path, regexPair(v.Data))})
			}
			continue
		}
		negated := name == "$ne" || name == "$nin" || (name == "$exists" && !value.Truthy(arg))
		out = append(out, clause{op: name, path: path, arg: arg, src: single(path, value.DocValue(single(name, arg))), negated: negated})
		continue
	}
	return out
}

// regexPair is the $regex and $options of an operator document.
func regexPair(ops []byte) bsoncore.Value {
	b := bsoncore.NewDocumentBuilder()
	for _, k := range []string{"$regex", "$options"} {
		if v, ok := value.LookupField(ops, k); ok {
			b.AppendValue(k, v)
		}
	}
	return value.DocValue(b.Build())
}

// explain explains one clause that failed (or, inverted, matched).
func (x *explainer) explain(c clause, doc []byte, inv bool) bsoncore.Document {
	switch c.op {
	case "$and", "$or", "$nor":
		var subs []clause
		for _, e := range value.ArrayValues(c.arg.Data) {
			subs = append(subs, clause{op: "_filter", arg: e, src: e.Data})
		}
		return x.logical(c.op, subs, doc, inv)
	case "_filter":
		return x.filterDoc(c.arg.Data, doc, inv)
	case "$not":
		return x.not(c, doc, inv)
	case "$expr":
		return x.expr(c, doc, inv)
	case "$jsonSchema":
		return x.jsonSchema(c, doc, inv)
	case "$alwaysFalse", "$alwaysTrue":
		return newDetail(c.op).specified(c.src).reason(inv, "expression always evaluates to false", "expression always evaluates to true").build()
	}
	return x.leaf(c, doc, inv != c.negated)
}

// matches reports whether doc matches a clause's filter.
func (x *explainer) matches(src, doc []byte) bool {
	f, err := CompileFilterEnv(src, x.env)
	return err == nil && f.Match(doc)
}

// logical explains $and, $or and $nor: the clauses that decided the
// outcome, each with its index. An $and fails by its failing clauses, an
// $or by all of them; inverted, an $and matched by all and an $or by its
// matching ones. A $nor is an $or inverted.
func (x *explainer) logical(op string, cs []clause, doc []byte, inv bool) bsoncore.Document {
	childInv := inv
	if op == "$nor" {
		childInv = !inv
	}
	key := "clausesNotSatisfied"
	if childInv {
		key = "clausesSatisfied"
	}
	// Which children are to blame: with an $and the failing ones, with an
	// $or (a $nor is one inverted) the matching ones, else all.
	filterOn := (op == "$and" && !childInv) || (op != "$and" && childInv)
	arr := bsoncore.NewArrayBuilder()
	for i, c := range cs {
		if filterOn && x.matches(c.src, doc) != childInv {
			continue
		}
		if d := x.explain(c, doc, childInv); d != nil {
			arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendInt32("index", int32(i)).AppendDocument("details", d).Build())
		}
	}
	return newDetail(op).array(key, arr.Build()).build()
}

// not explains {path: {$not: ...}}: the operators under it, inverted.
func (x *explainer) not(c clause, doc []byte, inv bool) bsoncore.Document {
	d := newDetail("$not")
	if sub := x.clauses(pathClauses(c.path, c.arg), doc, !inv); sub != nil {
		d.doc("details", sub)
	}
	return d.build()
}

// expr explains a $expr by the value its expression computed.
func (x *explainer) expr(c clause, doc []byte, inv bool) bsoncore.Document {
	d := newDetail("$expr").specified(c.src)
	e, err := compileExpr(c.arg, x.env.scope())
	var v bsoncore.Value
	if err == nil {
		v, err = e.eval(newEvalCtx(doc, x.env))
	}
	if err != nil {
		me := mongoerr.As(err)
		d.str("reason", "failed to evaluate aggregation expression")
		return d.doc("details", bsoncore.NewDocumentBuilder().AppendInt32("code", int32(me.Code)).
			AppendString("codeName", me.Code.Name()).AppendString("errmsg", me.Msg).Build()).build()
	}
	d.reason(inv, "expression did not match", "expression did match")
	if v.Type != 0 {
		d.val("expressionResult", v)
	}
	return d.build()
}

// leafKind says how a path operator is explained: its reasons, the types
// it applies to (nil: all), and whether it looks at whole arrays.
type leafKind struct {
	normal, inverted string
	types            []bsoncore.Type
	wholeArrays      bool
	showTypes        bool // $type: the considered types follow the values
}

var (
	numberTypes = []bsoncore.Type{bsoncore.TypeDecimal128, bsoncore.TypeDouble, bsoncore.TypeInt32, bsoncore.TypeInt64}
	arrayTypes  = []bsoncore.Type{bsoncore.TypeArray}
	comparison  = leafKind{normal: "comparison failed", inverted: "comparison succeeded"}
	bitsKind    = leafKind{normal: "bitwise operator failed to match", inverted: "bitwise operator matched successfully",
		types: append([]bsoncore.Type{bsoncore.TypeBinary}, numberTypes...)}
)

// leafKinds are the path operators' explanations (mongod's reasons).
var leafKinds = map[string]leafKind{
	"$eq": comparison, "$gt": comparison, "$gte": comparison, "$lt": comparison, "$lte": comparison,
	"$ne":    comparison,
	"$in":    {normal: "no matching value found in array", inverted: "matching value found in array"},
	"$nin":   {normal: "no matching value found in array", inverted: "matching value found in array"},
	"$type":  {normal: "type did not match", inverted: "type did match", showTypes: true},
	"$mod":   {normal: "$mod did not evaluate to expected remainder", inverted: "$mod did evaluate to expected remainder", types: numberTypes},
	"$regex": {normal: "regular expression did not match", inverted: "regular expression did match", types: []bsoncore.Type{bsoncore.TypeRegex, bsoncore.TypeString, bsoncore.TypeSymbol}},
	"$size":  {normal: "array length was not equal to given size", inverted: "array length was equal to given size", types: arrayTypes, wholeArrays: true},
	"$elemMatch": {normal: "array did not satisfy the child predicate", inverted: "array did satisfy the child predicate",
		types: arrayTypes, wholeArrays: true},
	"$all":          {normal: "array did not contain all specified values", inverted: "array did contain all specified values", wholeArrays: true},
	"$bitsAllClear": bitsKind, "$bitsAllSet": bitsKind, "$bitsAnyClear": bitsKind, "$bitsAnySet": bitsKind,
}

// leaf explains a path operator by the values the path reached.
func (x *explainer) leaf(c clause, doc []byte, inv bool) bsoncore.Document {
	d := newDetail(c.op).specified(c.src)
	if c.op == "$exists" {
		return d.reason(inv, "path does not exist", "path does exist").build()
	}
	if c.op == "$all" && value.ArrayLen(c.arg.Data) == 0 {
		return d.reason(inv, "expression always evaluates to false", "expression always evaluates to true").build()
	}
	kind := leafKinds[c.op]
	vals, found := consideredValues(doc, c.path, kind.wholeArrays)
	if !found {
		return d.str("reason", "field was missing").build()
	}
	if kind.types != nil && !anyOfTypes(vals, kind.types) {
		d.str("reason", "type did not match").types("consideredType", vals)
		if len(kind.types) == 1 {
			d.str("expectedType", value.TypeName(kind.types[0]))
		} else {
			d.val("expectedTypes", typeNames(kind.types))
		}
		return d.considered(vals).build()
	}
	d.reason(inv, kind.normal, kind.inverted).considered(vals)
	if kind.showTypes {
		d.types("consideredType", vals)
	}
	return d.build()
}

// consideredValues are the values a path reaches, as mongod lists them:
// the elements of an array at the end of the path rather than the array
// (whole arrays for the operators on arrays). found is false when the path
// reaches nothing at all.
func consideredValues(doc []byte, path string, wholeArrays bool) ([]bsoncore.Value, bool) {
	var vals []bsoncore.Value
	found := false
	value.WalkPath(doc, value.SplitPath(path), func(v bsoncore.Value, k value.VisitKind) bool {
		switch {
		case k == value.KindMissing:
		case k == value.KindValue:
			found = true
			if wholeArrays || v.Type != bsoncore.TypeArray {
				vals = append(vals, v)
			}
		case !wholeArrays:
			vals = append(vals, v)
		}
		return false
	})
	return vals, found
}

func anyOfTypes(vals []bsoncore.Value, types []bsoncore.Type) bool {
	for _, v := range vals {
		for _, t := range types {
			if v.Type == t {
				return true
			}
		}
	}
	return false
}

// typeNames is the sorted set of the types' names, as an array.
func typeNames(types []bsoncore.Type) bsoncore.Value {
	set := map[string]bool{}
	for _, t := range types {
		set[value.TypeName(t)] = true
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	arr := bsoncore.NewArrayBuilder()
	for _, n := range names {
		arr.AppendString(n)
	}
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr.Build()}
}

// detail builds one node of the details, in mongod's field order.
type detail struct{ b *bsoncore.DocumentBuilder }

func newDetail(op string) *detail {
	return &detail{b: bsoncore.NewDocumentBuilder().AppendString("operatorName", op)}
}

func (d *detail) str(k, v string) *detail { d.b.AppendString(k, v); return d }

func (d *detail) val(k string, v bsoncore.Value) *detail { d.b.AppendValue(k, v); return d }

func (d *detail) doc(k string, v bsoncore.Document) *detail { d.b.AppendDocument(k, v); return d }

func (d *detail) array(k string, v bsoncore.Array) *detail { d.b.AppendArray(k, v); return d }

func (d *detail) specified(src bsoncore.Document) *detail { return d.doc("specifiedAs", src) }

func (d *detail) reason(inv bool, normal, inverted string) *detail {
	if inv {
		return d.str("reason", inverted)
	}
	return d.str("reason", normal)
}

// considered appends the values: one as consideredValue, else (none
// included: an empty array) as consideredValues.
func (d *detail) considered(vals []bsoncore.Value) *detail {
	if len(vals) == 1 {
		return d.val("consideredValue", vals[0])
	}
	return d.val("consideredValues", value.BuildArray(vals))
}

// types appends the values' types: one as key, several as key+"s".
func (d *detail) types(key string, vals []bsoncore.Value) *detail {
	if len(vals) == 0 {
		return d
	}
	ts := make([]bsoncore.Type, len(vals))
	for i, v := range vals {
		ts[i] = v.Type
	}
	names := typeNames(ts)
	if value.ArrayLen(names.Data) == 1 {
		return d.val(key, value.ArrayValues(names.Data)[0])
	}
	return d.val(key+"s", names)
}

func (d *detail) build() bsoncore.Document { return d.b.Build() }

// single is the one-field document {k: v}.
func single(k string, v bsoncore.Value) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue(k, v).Build()
}
