package query

import (
	"math"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

func noParse(*updateOp) error { return nil }

// setPath stores n at op's path, creating intermediate documents.
func setPath(c *applyCtx, parts []string, n *mnode) error {
	parent, err := navigate(c.root, parts, true)
	if err != nil {
		return err
	}
	parent.setChild(parts[len(parts)-1], n)
	return nil
}

func applySet(c *applyCtx, op *updateOp) error { return setPath(c, op.parts, leafM(op.arg)) }

func applySetOnInsert(c *applyCtx, op *updateOp) error {
	if !c.isInsert {
		return nil
	}
	return applySet(c, op)
}

func applyUnset(c *applyCtx, op *updateOp) error {
	parent, _ := navigate(c.root, op.parts, false)
	if parent != nil && parent.isContainer() {
		parent.removeChild(op.parts[len(op.parts)-1])
	}
	return nil
}

func parseArith(name, verb string) func(*updateOp) error {
	return func(op *updateOp) error {
		if !value.IsNumber(op.arg) {
			return mongoerr.New(mongoerr.TypeMismatch, "Cannot %s with non-numeric argument: {%s}", verb, value.FormatElem(op.path, op.arg))
		}
		return nil
	}
}

// applyArith is $inc (mul=false) and $mul. A missing field becomes the
// increment, or zero of the multiplier's type for $mul.
func applyArith(mul bool) func(*applyCtx, *updateOp) error {
	name := "$inc"
	if mul {
		name = "$mul"
	}
	return func(c *applyCtx, op *updateOp) error {
		cur := getPath(c.root, op.parts)
		if cur == nil {
			start := op.arg
			if mul {
				start, _ = value.Arith(value.Int32(0), op.arg, true)
			}
			return setPath(c, op.parts, leafM(start))
		}
		v := cur.value()
		if !value.IsNumber(v) {
			return mongoerr.New(mongoerr.TypeMismatch, "Cannot apply %s to a value of non-numeric type. %s has the field '%s' of non-numeric type %s", name, c.idText, op.parts[len(op.parts)-1], value.TypeName(v.Type))
		}
		r, ok := value.Arith(v, op.arg, mul)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "Failed to apply %s operations to current value ((%s)%s) for document %s", name, debugTypeName(v.Type), value.FormatNumber(v), c.idText)
		}
		return setPath(c, op.parts, leafM(r))
	}
}

// debugTypeName is the prefix mongod's SafeNum debug strings use.
func debugTypeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeInt32:
		return "NumberInt"
	case bsoncore.TypeInt64:
		return "NumberLong"
	case bsoncore.TypeDecimal128:
		return "NumberDecimal"
	}
	return "NumberDouble"
}

// applyMinMax is $min (sign -1) and $max (sign 1).
func applyMinMax(sign int) func(*applyCtx, *updateOp) error {
	return func(c *applyCtx, op *updateOp) error {
		cur := getPath(c.root, op.parts)
		if cur != nil && value.Compare(op.arg, cur.value())*sign <= 0 {
			return nil
		}
		return setPath(c, op.parts, leafM(op.arg))
	}
}

func parseCurrentDate(op *updateOp) error {
	switch {
	case op.arg.Type == bsoncore.TypeBoolean:
		return nil
	case op.arg.Type == bsoncore.TypeEmbeddedDocument:
		t, ok := value.LookupField(op.arg.Data, "$type")
		if ok && t.Type == bsoncore.TypeString && (t.StringValue() == "date" || t.StringValue() == "timestamp") {
			return nil
		}
		return mongoerr.New(mongoerr.BadValue, "The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
	}
	return mongoerr.New(mongoerr.BadValue, "%s is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).", value.FormatElem(op.path, op.arg))
}

func applyCurrentDate(c *applyCtx, op *updateOp) error {
	now := time.Now()
	v := bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, now.UnixMilli())}
	if op.arg.Type == bsoncore.TypeEmbeddedDocument {
		if t, _ := value.LookupField(op.arg.Data, "$type"); t.StringValue() == "timestamp" {
			v = bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: bsoncore.AppendTimestamp(nil, uint32(now.Unix()), 1)}
		}
	}
	return setPath(c, op.parts, leafM(v))
}

// parseRename turns {$rename: {from: "to"}} into a target op (op, applied
// at "to") and a source op (op.from, applied at "from").
func parseRename(op *updateOp) error {
	if op.arg.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.BadValue, "The 'to' field for $rename must be a string: %s", value.FormatElem(op.path, op.arg))
	}
	to := op.arg.StringValue()
	if strings.IndexByte(to, 0) >= 0 {
		return mongoerr.New(mongoerr.BadValue, "The 'to' field for $rename cannot contain an embedded null byte")
	}
	if err := validateUpdatePath(to); err != nil {
		return err
	}
	if strings.Contains(to, "$") {
		return mongoerr.New(mongoerr.BadValue, "The destination field for $rename may not be dynamic: %s", to)
	}
	if to == op.path {
		return mongoerr.New(mongoerr.BadValue, "The source and target field for $rename must differ: %s: \"%s\"", op.path, to)
	}
	toParts := value.SplitPath(to)
	if isPrefix(op.parts, toParts) || isPrefix(toParts, op.parts) {
		return mongoerr.New(mongoerr.BadValue, "The source and target field for $rename must not be on the same path: %s: \"%s\"", op.path, to)
	}
	src := &updateOp{mod: &modifier{name: "$rename", apply: applyUnset}, path: op.path, parts: op.parts}
	op.path, op.parts, op.from = to, toParts, src
	return nil
}

func applyRename(c *applyCtx, op *updateOp) error {
	src := c.renamed[op]
	if src.err != nil || src.n == nil {
		return src.err
	}
	if err := c.checkRenameTarget(op); err != nil {
		return err
	}
	return setPath(c, op.parts, src.n)
}

// renameSource is a $rename's source, found before any modifier applies:
// the node (nil: absent, a no-op), or why mongod refuses the path.
type renameSource struct {
	n   *mnode
	err error
}

// findRenameSource looks a $rename's source up as mongod does: a path
// that cannot be followed (through a scalar, or an array by a name that
// is no index) is PathNotViable, a field inside an array BadValue, since
// $rename moves fields and not array elements.
func (c *applyCtx) findRenameSource(parts []string) renameSource {
	path := strings.Join(parts, ".")
	cur := c.root
	for i, p := range parts {
		if _, isIndex := value.ParseIndex(p); !cur.isContainer() || (cur.typ() == bsoncore.TypeArray && !isIndex) {
			return renameSource{err: mongoerr.New(mongoerr.PathNotViable, "cannot use the part (%s of %s) to traverse the element ({%s})",
				parts[i-1], path, value.FormatElem(parts[i-1], cur.value()))}
		}
		if cur = cur.child(p); cur == nil {
			return renameSource{}
		}
	}
	if name, ok := innermostArray(c.root, parts[:len(parts)-1]); ok {
		return renameSource{err: mongoerr.New(mongoerr.BadValue, "The source field cannot be an array element, '%s' in doc with %s has an array field called '%s'",
			path, c.idForMessage(), name)}
	}
	return renameSource{n: getPath(c.root, parts)}
}

// checkRenameTarget refuses a $rename whose destination lies inside an
// array (the existing part of its path, the destination itself aside).
func (c *applyCtx) checkRenameTarget(op *updateOp) error {
	cur, found := c.root, 0
	for _, p := range op.parts {
		if !cur.isContainer() {
			break
		}
		if cur = cur.child(p); cur == nil {
			break
		}
		found++
	}
	if name, ok := innermostArray(c.root, op.parts[:min(found, len(op.parts)-1)]); ok {
		return mongoerr.New(mongoerr.BadValue, "The destination field cannot be an array element, '%s' in doc with %s has an array field called '%s'",
			op.path, c.idForMessage(), name)
	}
	return nil
}

// innermostArray names the deepest array among the elements along parts
// (each present in root).
func innermostArray(root *mnode, parts []string) (string, bool) {
	name, found, cur := "", false, root
	for _, p := range parts {
		if cur = cur.child(p); cur.typ() == bsoncore.TypeArray {
			name, found = p, true
		}
	}
	return name, found
}

// idForMessage is the document's _id as mongod's $rename errors show it.
func (c *applyCtx) idForMessage() string {
	if c.idText == "{}" {
		return "no id"
	}
	return strings.TrimSuffix(strings.TrimPrefix(c.idText, "{"), "}")
}

// pushSpec is a $push argument: the values and the $each modifiers.
type pushSpec struct {
	each     []bsoncore.Value
	position *int
	slice    *int
	sortDir  int   // 1/-1 to sort whole elements
	sortBy   *Sort // {field: 1/-1} to sort documents
}

func parsePush(op *updateOp) error {
	spec := &pushSpec{}
	op.push = spec
	if op.arg.Type != bsoncore.TypeEmbeddedDocument || value.FirstKey(op.arg.Data) != "$each" {
		spec.each = []bsoncore.Value{op.arg}
		return nil
	}
	it := value.NewIter(op.arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		var err error
		switch string(k) {
		case "$each":
			if v.Type != bsoncore.TypeArray {
				return mongoerr.New(mongoerr.BadValue, "The argument to $each in $push must be an array but it was of type: %s", value.TypeName(v.Type))
			}
			spec.each = value.ArrayValues(v.Data)
		case "$position":
			spec.position, err = integralArg("$position", v)
		case "$slice":
			spec.slice, err = integralArg("$slice", v)
		case "$sort":
			err = spec.parseSort(v)
		default:
			return mongoerr.New(mongoerr.BadValue, "Unrecognized clause in $push: %s", k)
		}
		if err != nil {
			return err
		}
	}
}

func integralArg(name string, v bsoncore.Value) (*int, error) {
	if value.IsNumber(v) {
		f := value.ToFloat(v)
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			n := int(clampFloat(f))
			return &n, nil
		}
	}
	return nil, mongoerr.New(mongoerr.BadValue, "The value for %s must be an integer value but was given type: %s", name, value.TypeName(v.Type))
}

func (s *pushSpec) parseSort(v bsoncore.Value) error {
	if value.IsNumber(v) && (value.ToFloat(v) == 1 || value.ToFloat(v) == -1) {
		s.sortDir = int(value.ToFloat(v))
		return nil
	}
	if v.Type == bsoncore.TypeEmbeddedDocument && len(v.Data) > 5 {
		srt, err := CompileSort(v.Data)
		if err == nil {
			s.sortBy = srt
			return nil
		}
	}
	return mongoerr.New(mongoerr.BadValue, "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} to sort embedded fields")
}

func applyPush(c *applyCtx, op *updateOp) error {
	cur := getPath(c.root, op.parts)
	var elems []bsoncore.Value
	if cur != nil {
		v := cur.value()
		if v.Type != bsoncore.TypeArray {
			return mongoerr.New(mongoerr.BadValue, "The field '%s' must be an array but is of type %s in document %s", op.path, value.TypeName(v.Type), c.idText)
		}
		elems = value.ArrayValues(v.Data)
	}
	elems = op.push.apply(elems)
	return setPath(c, op.parts, leafM(value.BuildArray(elems)))
}

// apply inserts the values, then sorts, then slices, as mongod does.
func (s *pushSpec) apply(elems []bsoncore.Value) []bsoncore.Value {
	pos := len(elems)
	if s.position != nil {
		pos = *s.position
		if pos < 0 {
			pos = max(len(elems)+pos, 0)
		}
		pos = min(pos, len(elems))
	}
	out := make([]bsoncore.Value, 0, len(elems)+len(s.each))
	out = append(out, elems[:pos]...)
	out = append(out, s.each...)
	out = append(out, elems[pos:]...)
	switch {
	case s.sortDir != 0:
		sort.SliceStable(out, func(i, j int) bool { return value.Compare(out[i], out[j])*s.sortDir < 0 })
	case s.sortBy != nil:
		sort.SliceStable(out, func(i, j int) bool { return s.sortBy.Compare(docOrEmpty(out[i]), docOrEmpty(out[j])) < 0 })
	}
	if s.slice != nil {
		n := *s.slice
		if n >= 0 {
			out = out[:min(n, len(out))]
		} else {
			out = out[max(len(out)+n, 0):]
		}
	}
	return out
}

// docOrEmpty lets $push's field sort treat non-documents as missing fields.
func docOrEmpty(v bsoncore.Value) bsoncore.Document {
	if v.Type == bsoncore.TypeEmbeddedDocument {
		return v.Data
	}
	return emptyDoc
}

var emptyDoc = bsoncore.Document{5, 0, 0, 0, 0}

func parseAddToSet(op *updateOp) error {
	if op.arg.Type != bsoncore.TypeEmbeddedDocument || value.FirstKey(op.arg.Data) != "$each" {
		op.each = []bsoncore.Value{op.arg}
		return nil
	}
	v, _ := value.LookupField(op.arg.Data, "$each")
	if v.Type != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.TypeMismatch, "The argument to $each in $addToSet must be an array but it was of type %s", value.TypeName(v.Type))
	}
	if value.ArrayLen(op.arg.Data) > 1 {
		return mongoerr.New(mongoerr.BadValue, "Found unexpected fields after $each in $addToSet: %s", value.Format(op.arg))
	}
	op.each = value.ArrayValues(v.Data)
	return nil
}

func applyAddToSet(c *applyCtx, op *updateOp) error {
	cur := getPath(c.root, op.parts)
	var elems []bsoncore.Value
	if cur != nil {
		v := cur.value()
		if v.Type != bsoncore.TypeArray {
			return mongoerr.New(mongoerr.BadValue, "Cannot apply $addToSet to non-array field. Field named '%s' has non-array type %s", op.parts[len(op.parts)-1], value.TypeName(v.Type))
		}
		elems = value.ArrayValues(v.Data)
	}
	for _, add := range op.each {
		if !containsValue(elems, add) {
			elems = append(elems, add)
		}
	}
	return setPath(c, op.parts, leafM(value.BuildArray(elems)))
}

func containsValue(vals []bsoncore.Value, v bsoncore.Value) bool {
	for _, x := range vals {
		if value.Compare(x, v) == 0 {
			return true
		}
	}
	return false
}

func parsePop(op *updateOp) error {
	if value.IsNumber(op.arg) {
		if f := value.ToFloat(op.arg); f == 1 || f == -1 {
			return nil
		}
	}
	return mongoerr.New(mongoerr.FailedToParse, "$pop expects 1 or -1, found: %s", value.Format(op.arg))
}

func applyPop(c *applyCtx, op *updateOp) error {
	cur := getPath(c.root, op.parts)
	if cur == nil {
		return nil
	}
	v := cur.value()
	if v.Type != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.TypeMismatch, "Path '%s' contains an element of non-array type '%s'", op.path, value.TypeName(v.Type))
	}
	elems := value.ArrayValues(v.Data)
	if len(elems) == 0 {
		return nil
	}
	if value.ToFloat(op.arg) > 0 {
		elems = elems[:len(elems)-1]
	} else {
		elems = elems[1:]
	}
	return setPath(c, op.parts, leafM(value.BuildArray(elems)))
}

// parsePull compiles the $pull condition: an operator document applies to
// each element as a value, any other document is a filter over document
// elements, a regex matches strings, and anything else is equality.
func parsePull(op *updateOp) error {
	arg := op.arg
	switch {
	case arg.Type == bsoncore.TypeRegex:
		r, err := regexLeafFromValue(arg)
		if err != nil {
			return err
		}
		op.pull = func(e bsoncore.Value) bool { return r.matchValue(e, value.KindValue) }
	case value.IsOperatorDoc(arg) && !isDBRef(arg) && !logicalPullCondition(arg):
		n, err := (&Filter{env: op.env}).parseOps(op.path, arg.Data)
		if err != nil {
			return err
		}
		op.pull = func(e bsoncore.Value) bool { return n.eval(source{single: e}) }
	case arg.Type == bsoncore.TypeEmbeddedDocument:
		f, err := CompileFilterEnv(arg.Data, op.env)
		if err != nil {
			return err
		}
		op.pull = func(e bsoncore.Value) bool {
			return e.Type == bsoncore.TypeEmbeddedDocument && f.Match(e.Data)
		}
	default:
		op.pull = func(e bsoncore.Value) bool { return value.Compare(e, arg) == 0 }
	}
	return nil
}

// logicalPullCondition: a $pull condition led by a top-level query
// operator ($and, $or, $nor, $expr, ...) is a filter over document
// elements, as on mongod, not an operator on the element's value.
func logicalPullCondition(arg bsoncore.Value) bool {
	switch value.FirstKey(arg.Document()) {
	case "$and", "$or", "$nor", "$expr", "$comment", "$jsonSchema", "$where", "$text":
		return true
	}
	return false
}

func parsePullAll(op *updateOp) error {
	if op.arg.Type != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.BadValue, "$pullAll requires an array argument but was given a %s", value.TypeName(op.arg.Type))
	}
	vals := value.ArrayValues(op.arg.Data)
	op.pull = func(e bsoncore.Value) bool { return containsValue(vals, e) }
	return nil
}

// applyPull removes the matching elements ($pull and $pullAll).
func applyPull(c *applyCtx, op *updateOp) error {
	cur := getPath(c.root, op.parts)
	if cur == nil {
		return nil
	}
	v := cur.value()
	if v.Type != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.BadValue, "Cannot apply %s to a non-array value", op.mod.name)
	}
	var kept []bsoncore.Value
	for _, e := range value.ArrayValues(v.Data) {
		if !op.pull(e) {
			kept = append(kept, e)
		}
	}
	return setPath(c, op.parts, leafM(value.BuildArray(kept)))
}

// parseBit validates {$bit: {field: {and|or|xor: <int>}}}; only int32 and
// int64 operands are allowed.
func parseBit(op *updateOp) error {
	if op.arg.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.BadValue, "The $bit modifier is not compatible with a %s. You must pass in an embedded document: {$bit: {field: {and/or/xor: #}}", value.TypeName(op.arg.Type))
	}
	if len(op.arg.Data) <= 5 {
		return mongoerr.New(mongoerr.BadValue, "You must pass in at least one bitwise operation. The format is: {$bit: {field: {and/or/xor: #}}")
	}
	it := value.NewIter(op.arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		switch string(k) {
		case "and", "or", "xor":
		default:
			return mongoerr.New(mongoerr.BadValue, "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' which is an unknown operator: {%s}", k, value.FormatElem(string(k), v))
		}
		if v.Type != bsoncore.TypeInt32 && v.Type != bsoncore.TypeInt64 {
			return mongoerr.New(mongoerr.BadValue, "The $bit modifier field must be an Integer(32/64 bit); a '%s' is not supported here: {%s}", value.TypeName(v.Type), value.FormatElem(string(k), v))
		}
	}
}

// applyBit folds the bitwise operations into the field's integer; a
// missing field starts at 0 of the operand's type, and int32 op int64
// widens to int64.
func applyBit(c *applyCtx, op *updateOp) error {
	cur := value.Int32(0)
	if n := getPath(c.root, op.parts); n != nil {
		cur = n.value()
		if cur.Type != bsoncore.TypeInt32 && cur.Type != bsoncore.TypeInt64 {
			return mongoerr.New(mongoerr.BadValue, "Cannot apply $bit to a value of non-integral type.%s has the field %s of non-integer type %s", strings.TrimSuffix(strings.TrimPrefix(c.idText, "{"), "}"), op.parts[len(op.parts)-1], value.TypeName(cur.Type))
		}
	}
	it := value.NewIter(op.arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		x, y := cur.AsInt64(), v.AsInt64()
		var r int64
		switch string(k) {
		case "and":
			r = x & y
		case "or":
			r = x | y
		default:
			r = x ^ y
		}
		if cur.Type == bsoncore.TypeInt32 && v.Type == bsoncore.TypeInt32 {
			cur = value.Int32(int32(r))
		} else {
			cur = value.Int64(r)
		}
	}
	return setPath(c, op.parts, leafM(cur))
}
