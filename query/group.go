package query

import (
	"context"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"

	"dumbodb/query/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// fieldExpr is the expression subset $group takes for now: a "$path"
// field reference, a literal, or an object of those.
type fieldExpr struct {
	path    string           // "$a.b" without the "$"
	literal bsoncore.Value   // when path == "" and fields == nil
	fields  []namedFieldExpr // an object expression
	isObj   bool
}

type namedFieldExpr struct {
	name string
	expr *fieldExpr
}

func compileFieldExpr(v bsoncore.Value) (*fieldExpr, error) {
	if s, ok := v.StringValueOK(); ok && strings.HasPrefix(s, "$") {
		if strings.HasPrefix(s, "$$") {
			return nil, mongoerr.New(mongoerr.NotImplemented, "variables in $group are not supported yet: %s", s)
		}
		return &fieldExpr{path: s[1:]}, nil
	}
	doc, ok := v.DocumentOK()
	if !ok {
		return &fieldExpr{literal: v}, nil
	}
	els, _ := doc.Elements()
	e := &fieldExpr{isObj: true}
	for _, el := range els {
		if strings.HasPrefix(el.Key(), "$") {
			return nil, mongoerr.New(mongoerr.NotImplemented, "expression operator %s is not supported yet", el.Key())
		}
		sub, err := compileFieldExpr(el.Value())
		if err != nil {
			return nil, err
		}
		e.fields = append(e.fields, namedFieldExpr{name: el.Key(), expr: sub})
	}
	return e, nil
}

// eval returns the expression's value for doc; ok=false means missing.
func (e *fieldExpr) eval(doc bsoncore.Document) (bsoncore.Value, bool) {
	switch {
	case e.path != "":
		return LookupPath(doc, e.path)
	case e.isObj:
		b := bsoncore.NewDocumentBuilder()
		for _, f := range e.fields {
			if v, ok := f.expr.eval(doc); ok {
				b.AppendValue(f.name, v)
			}
		}
		d := b.Build()
		return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, true
	}
	return e.literal, true
}

// accumulator folds values of one group.
type accumulator interface {
	add(v bsoncore.Value, ok bool)
	result() bsoncore.Value
}

type accSpec struct {
	field string
	op    string
	expr  *fieldExpr
}

var accumulators = map[string]func() accumulator{
	"$sum":   func() accumulator { return &sumAcc{} },
	"$avg":   func() accumulator { return &sumAcc{avg: true} },
	"$min":   func() accumulator { return &extremeAcc{sign: -1} },
	"$max":   func() accumulator { return &extremeAcc{sign: 1} },
	"$first": func() accumulator { return &firstLastAcc{first: true} },
	"$last":  func() accumulator { return &firstLastAcc{} },
	"$count": func() accumulator { return &sumAcc{count: true} },
}

func compileGroupStage(spec bsoncore.Value) (stage, error) {
	doc, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Code(15947), "a group's fields must be specified in an object")
	}
	els, _ := doc.Elements()
	var idExpr *fieldExpr
	var accs []accSpec
	for _, el := range els {
		if el.Key() == "_id" {
			e, err := compileFieldExpr(el.Value())
			if err != nil {
				return nil, err
			}
			idExpr = e
			continue
		}
		a, err := compileAccumulator(el)
		if err != nil {
			return nil, err
		}
		accs = append(accs, a)
	}
	if idExpr == nil {
		return nil, mongoerr.New(mongoerr.Code(15955), "a group specification must include an _id")
	}
	return func(in Stream) Stream { return &groupStream{in: in, id: idExpr, accs: accs} }, nil
}

func compileAccumulator(el bsoncore.Element) (accSpec, error) {
	d, ok := el.Value().DocumentOK()
	if !ok {
		return accSpec{}, mongoerr.New(mongoerr.Code(40234), "The field '%s' must be an accumulator object", el.Key())
	}
	aels, _ := d.Elements()
	if len(aels) != 1 {
		return accSpec{}, mongoerr.New(mongoerr.Code(40238), "The field '%s' must specify one accumulator", el.Key())
	}
	op := aels[0].Key()
	if _, ok := accumulators[op]; !ok {
		return accSpec{}, mongoerr.New(mongoerr.Code(15952), "unknown group operator '%s'", op)
	}
	e, err := compileFieldExpr(aels[0].Value())
	if err != nil {
		return accSpec{}, err
	}
	return accSpec{field: el.Key(), op: op, expr: e}, nil
}

// groupStream groups its whole input on the first Next, then yields one
// document per group in order of first appearance.
type groupStream struct {
	in     Stream
	id     *fieldExpr
	accs   []accSpec
	out    []bsoncore.Document
	loaded bool
}

type group struct {
	id   bsoncore.Value
	accs []accumulator
}

func (g *groupStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if !g.loaded {
		if err := g.load(ctx); err != nil {
			return nil, err
		}
		g.loaded = true
	}
	if len(g.out) == 0 {
		return nil, io.EOF
	}
	d := g.out[0]
	g.out = g.out[1:]
	return d, nil
}

func (g *groupStream) load(ctx context.Context) error {
	buckets := map[string][]*group{}
	var order []*group
	for {
		doc, err := g.in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		id, ok := g.id.eval(doc)
		if !ok {
			id = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		key := bucketKey(id)
		gr := findGroup(buckets[key], id)
		if gr == nil {
			gr = &group{id: id}
			for _, a := range g.accs {
				gr.accs = append(gr.accs, accumulators[a.op]())
			}
			buckets[key] = append(buckets[key], gr)
			order = append(order, gr)
		}
		for i, a := range g.accs {
			v, ok := a.expr.eval(doc)
			gr.accs[i].add(v, ok)
		}
	}
	for _, gr := range order {
		b := bsoncore.NewDocumentBuilder().AppendValue("_id", gr.id)
		for i, a := range g.accs {
			b.AppendValue(a.field, gr.accs[i].result())
		}
		g.out = append(g.out, b.Build())
	}
	return nil
}

// bucketKey is a coarse hash of a group key: values that Compare equal
// always share a bucket (numbers by value, strings by bytes, everything else
// by type), and findGroup tells them apart within it.
func bucketKey(v bsoncore.Value) string {
	if f, ok := v.AsFloat64OK(); ok {
		if f == 0 {
			f = 0 // -0 and 0 group together
		}
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	if s, ok := v.StringValueOK(); ok {
		return "s" + s
	}
	return "t" + strconv.Itoa(CanonicalType(v.Type))
}

func findGroup(bucket []*group, id bsoncore.Value) *group {
	for _, g := range bucket {
		if Compare(g.id, id) == 0 {
			return g
		}
	}
	return nil
}

// sumAcc implements $sum, $avg and $count with mongod's result types: the
// narrowest integer type that holds an all-integer sum, else a double.
type sumAcc struct {
	avg, count bool
	i          int64
	f          float64
	isFloat    bool
	wide       bool // some input was int64 or the sum left int32
	n          int64
}

func (s *sumAcc) add(v bsoncore.Value, ok bool) {
	if s.count {
		s.i++
		s.n++
		return
	}
	if !ok {
		return
	}
	switch v.Type {
	case bsoncore.TypeInt32:
		s.addInt(int64(v.Int32()))
	case bsoncore.TypeInt64:
		s.wide = true
		s.addInt(v.Int64())
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := v.AsFloat64OK()
		s.isFloat = true
		s.f += f
	default:
		return
	}
	s.n++
}

func (s *sumAcc) addInt(x int64) {
	sum := s.i + x
	if (x > 0 && sum < s.i) || (x < 0 && sum > s.i) {
		s.isFloat = true
		s.f += float64(s.i) + float64(x)
		s.i = 0
		return
	}
	s.i = sum
}

func (s *sumAcc) result() bsoncore.Value {
	if s.avg {
		if s.n == 0 {
			return bsoncore.Value{Type: bsoncore.TypeNull}
		}
		return doubleValue((s.f + float64(s.i)) / float64(s.n))
	}
	if s.isFloat {
		return doubleValue(s.f + float64(s.i))
	}
	if !s.wide && s.i >= math.MinInt32 && s.i <= math.MaxInt32 {
		return smallestInt(s.i)
	}
	return bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, s.i)}
}

func doubleValue(f float64) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, f)}
}

// extremeAcc implements $min (sign -1) and $max (sign 1); missing and null
// values are ignored.
type extremeAcc struct {
	sign int
	best bsoncore.Value
	have bool
}

func (e *extremeAcc) add(v bsoncore.Value, ok bool) {
	if !ok || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
		return
	}
	if !e.have || Compare(v, e.best)*e.sign > 0 {
		e.best, e.have = v, true
	}
}

func (e *extremeAcc) result() bsoncore.Value {
	if !e.have {
		return bsoncore.Value{Type: bsoncore.TypeNull}
	}
	return e.best
}

// firstLastAcc implements $first and $last; a missing value counts as null.
type firstLastAcc struct {
	first bool
	v     bsoncore.Value
	have  bool
}

func (f *firstLastAcc) add(v bsoncore.Value, ok bool) {
	if !ok {
		v = bsoncore.Value{Type: bsoncore.TypeNull}
	}
	if f.first && f.have {
		return
	}
	f.v, f.have = v, true
}

func (f *firstLastAcc) result() bsoncore.Value {
	if !f.have {
		return bsoncore.Value{Type: bsoncore.TypeNull}
	}
	return f.v
}

// DistinctValues is what the distinct command returns for a key: every
// value at path in docs, with arrays contributing their elements, each
// value once (by Compare), in order of first appearance.
func DistinctValues(docs []bsoncore.Document, path string) []bsoncore.Value {
	buckets := map[string][]*group{}
	var out []bsoncore.Value
	add := func(v bsoncore.Value) {
		key := bucketKey(v)
		if findGroup(buckets[key], v) == nil {
			buckets[key] = append(buckets[key], &group{id: v})
			out = append(out, v)
		}
	}
	for _, d := range docs {
		for _, v := range pathValues(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, strings.Split(path, ".")) {
			if arr, ok := v.ArrayOK(); ok {
				vals, _ := arr.Values()
				for _, e := range vals {
					add(e)
				}
				continue
			}
			add(v)
		}
	}
	return out
}

// pathValues collects the values at a dotted path, descending into arrays
// of documents on the way (a.b over {a: [{b: 1}, {b: 2}]} gives 1 and 2).
func pathValues(v bsoncore.Value, parts []string) []bsoncore.Value {
	if len(parts) == 0 {
		return []bsoncore.Value{v}
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		child, err := v.Document().LookupErr(parts[0])
		if err != nil {
			return nil
		}
		return pathValues(child, parts[1:])
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		var out []bsoncore.Value
		for _, e := range vals {
			if e.Type == bsoncore.TypeEmbeddedDocument {
				out = append(out, pathValues(e, parts)...)
			}
		}
		return out
	}
	return nil
}
