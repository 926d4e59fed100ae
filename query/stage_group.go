package query

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $group: documents are grouped by the value of the _id expression and
// each output field is an accumulator (acc_*.go) folded over its group.

type accSpec struct {
	field string
	mk    accFactory
}

func compileGroupStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location15947, "a group's fields must be specified in an object")
	}
	scope := pc.env.scope()
	var idExpr Expr
	var accs []accSpec
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		name := string(k)
		if name == "_id" {
			x, err := compileExpr(v, scope)
			if err != nil {
				return nil, err
			}
			idExpr = x
			continue
		}
		a, err := compileAccumulator(name, v, scope, pc.env)
		if err != nil {
			return nil, err
		}
		accs = append(accs, a)
	}
	if idExpr == nil {
		return nil, mongoerr.New(mongoerr.Location15955, "a group specification must include an _id")
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			return groupDocs(ctx, in, idExpr, accs, pc.env, pc.budget("$group"))
		})
	}, nil
}

// compileAccumulator compiles one output field {name: {<acc>: <arg>}},
// checking it in mongod's order: the value first (an object whose first
// field is an operator; {} is not), then the name, then the one field.
func compileAccumulator(name string, v bsoncore.Value, s *compileScope, env *Env) (accSpec, error) {
	if !value.IsOperatorDoc(v) {
		return accSpec{}, mongoerr.New(mongoerr.Location40234, "The field '%s' must be an accumulator object", name)
	}
	if strings.Contains(name, ".") {
		return accSpec{}, mongoerr.New(mongoerr.Location40235, "The field name '%s' cannot contain '.'", name)
	}
	if strings.HasPrefix(name, "$") {
		return accSpec{}, mongoerr.New(mongoerr.Location40236, "The field name '%s' cannot be an operator name", name)
	}
	if value.ArrayLen(v.Data) != 1 {
		return accSpec{}, mongoerr.New(mongoerr.Location40238, "The field '%s' must specify one accumulator", name)
	}
	op := value.FirstKey(v.Data)
	acc, ok := accumulatorOps[op]
	if !ok {
		return accSpec{}, mongoerr.New(mongoerr.Location15952, "unknown group operator '%s'", op)
	}
	arg, _ := value.LookupField(v.Data, op)
	mk, err := acc.compile(op, arg, s, env)
	if err != nil {
		return accSpec{}, err
	}
	return accSpec{field: name, mk: mk}, nil
}

type group struct {
	id   bsoncore.Value
	accs []accumulator
	held int64 // bytes the accumulators took
}

// add folds the document of c into the group's accumulators and returns
// the bytes they took for it.
func (gr *group) add(c *evalCtx) (int, error) {
	total := 0
	for _, a := range gr.accs {
		n, err := a.add(c)
		if err != nil {
			return 0, err
		}
		total += n
	}
	gr.held += int64(total)
	return total, nil
}

// groupTable finds groups by key: bucketKey narrows, Compare (with the
// collation) decides.
type groupTable struct {
	coll    *value.Collation
	buckets map[string][]*group
	order   []*group
	scratch []byte // find's key
}

func (t *groupTable) find(id bsoncore.Value) *group {
	var bucket []*group
	if t.simpleKeys(id) {
		// Looked up through a reused buffer: a string made for every
		// document was most of a $group's garbage.
		t.scratch = appendBucketKey(t.scratch[:0], id)
		bucket = t.buckets[string(t.scratch)]
	} else {
		bucket = t.buckets[t.key(id)]
	}
	for _, g := range bucket {
		if value.CompareWith(g.id, id, t.coll) == 0 {
			return g
		}
	}
	return nil
}

func (t *groupTable) insert(g *group) {
	k := t.key(g.id)
	t.buckets[k] = append(t.buckets[k], g)
	t.order = append(t.order, g)
}

// key buckets strings by their collation sort key under a collation,
// where different bytes may compare equal, and keeps documents and arrays
// (which may hold such strings) in one bucket per type.
func (t *groupTable) key(id bsoncore.Value) string {
	if t.simpleKeys(id) {
		return bucketKey(id)
	}
	if s, ok := id.StringValueOK(); ok {
		return "c" + string(t.coll.AppendKey(nil, []byte(s)))
	}
	return "t" + strconv.Itoa(value.CanonicalType(id.Type))
}

// simpleKeys reports whether id's bucket is its bucketKey: always
// without a collation, and for numbers with one.
func (t *groupTable) simpleKeys(id bsoncore.Value) bool {
	return t.coll == nil || value.CanonicalType(id.Type) == value.CanonicalType(bsoncore.TypeDouble)
}

// groupDocs groups the whole input, then yields one document per group in
// order of first appearance. With allowDiskUse it also keeps the keyed
// input; once over the budget it drops the groups and regroups that input
// and the rest through an external sort by group key (spillGroups).
func groupDocs(ctx context.Context, in Stream, idExpr Expr, accs []accSpec, env *Env, b *memBudget) (Stream, error) {
	t := &groupTable{coll: env.coll(), buckets: map[string][]*group{}}
	var kept []keyedDoc
	// One context serves every document in turn: nothing keeps it past
	// its document's evaluation, and a context a document makes is garbage
	// a million-document $group would make a million times.
	c := &evalCtx{}
	for {
		doc, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		c.reset(doc, env)
		id, err := idExpr.eval(c)
		if err != nil {
			return nil, err
		}
		if id.Type == 0 {
			id = value.Null
		}
		if b.allowDisk {
			kept = append(kept, keyedDoc{key: id, doc: doc})
			if err := b.add(len(doc) + len(id.Data) + 48); err != nil {
				return nil, err
			}
			if b.over() {
				return spillGroups(ctx, kept, in, idExpr, accs, env, b)
			}
		}
		gr := t.find(id)
		if gr == nil {
			gr = &group{id: id}
			for _, a := range accs {
				gr.accs = append(gr.accs, a.mk())
			}
			t.insert(gr)
			if err := b.add(len(id.Data) + 64*(1+len(accs))); err != nil {
				return nil, err
			}
		}
		n, err := gr.add(c)
		if err != nil {
			return nil, err
		}
		if err := b.add(n); err != nil {
			return nil, err
		}
	}
	out := make([]bsoncore.Document, 0, len(t.order))
	for _, gr := range t.order {
		d, err := groupResult(gr, accs)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return &sliceStream{docs: out}, nil
}

func groupResult(gr *group, accs []accSpec) (bsoncore.Document, error) {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = bsoncore.AppendValueElement(dst, "_id", gr.id)
	for i, a := range gr.accs {
		v, err := a.result()
		if err != nil {
			return nil, err
		}
		dst = bsoncore.AppendValueElement(dst, accs[i].field, v)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, nil
}

// bucketKey is a coarse hash of a group key: values that Compare equal
// always share a bucket (numbers by value, strings by bytes, everything else
// by type), and findGroup tells them apart within it.
func bucketKey(v bsoncore.Value) string { return string(appendBucketKey(nil, v)) }

// appendBucketKey appends v's bucket key to dst: numbers by value (-0
// and 0 together), strings by their bytes, anything else by its type.
func appendBucketKey(dst []byte, v bsoncore.Value) []byte {
	if f, ok := v.AsFloat64OK(); ok {
		if f == 0 {
			f = 0 // -0 and 0 group together
		}
		return strconv.AppendFloat(append(dst, 'n'), f, 'g', -1, 64)
	}
	if v.Type == bsoncore.TypeString && len(v.Data) >= 5 {
		// The bytes between the length and the NUL, not a string made
		// of them.
		return append(append(dst, 's'), v.Data[4:len(v.Data)-1]...)
	}
	return strconv.AppendInt(append(dst, 't'), int64(value.CanonicalType(v.Type)), 10)
}

func findGroup(bucket []*group, id bsoncore.Value) *group {
	for _, g := range bucket {
		if value.Compare(g.id, id) == 0 {
			return g
		}
	}
	return nil
}

// DistinctValues is what the distinct command returns for a key: every
// value at path in docs, with arrays contributing their elements, each
// value once (equal under collation c; nil: simple), in order of first
// appearance.
func DistinctValues(docs []bsoncore.Document, path string, c *value.Collation) []bsoncore.Value {
	t := &groupTable{coll: c, buckets: map[string][]*group{}}
	var out []bsoncore.Value
	add := func(v bsoncore.Value) {
		if t.find(v) == nil {
			t.insert(&group{id: v})
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

// spillGroups groups by an external sort: every input document is keyed
// as {k: <group key>, d: <document>}, sorted stably by key (sortStream
// spills runs to temporary files past the budget) and folded one group
// at a time, so memory holds one run and one group. Groups come out in
// key order; within a group, documents keep their input order.
func spillGroups(ctx context.Context, kept []keyedDoc, rest Stream, idExpr Expr, accs []accSpec, env *Env, b *memBudget) (Stream, error) {
	coll := env.coll()
	keyed := funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		if len(kept) > 0 {
			kd := kept[0]
			kept[0] = keyedDoc{}
			kept = kept[1:]
			return keyedRecord(kd.key, kd.doc), nil
		}
		doc, err := rest.Next(ctx)
		if err != nil {
			return nil, err
		}
		id, err := idExpr.eval(newEvalCtx(doc, env))
		if err != nil {
			return nil, err
		}
		if id.Type == 0 {
			id = value.Null
		}
		return keyedRecord(id, doc), nil
	})
	sorted, err := sortStream(ctx, keyed, func(a, c bsoncore.Document) int {
		return value.CompareWith(recordKey(a), recordKey(c), coll)
	}, b.spilling())
	if err != nil {
		return nil, err
	}
	var pending bsoncore.Document // the first record of the next group
	done := false
	return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		if done {
			return nil, io.EOF
		}
		if pending == nil {
			d, err := sorted.Next(ctx)
			if err != nil {
				return nil, err
			}
			pending = d
		}
		gr := &group{id: recordKey(pending)}
		for _, a := range accs {
			gr.accs = append(gr.accs, a.mk())
		}
		for {
			doc, _ := value.LookupField(pending, "d")
			if _, err := gr.add(newEvalCtx(doc.Data, env)); err != nil {
				return nil, err
			}
			next, err := sorted.Next(ctx)
			if errors.Is(err, io.EOF) {
				done = true
				break
			}
			if err != nil {
				return nil, err
			}
			pending = next
			if value.CompareWith(gr.id, recordKey(next), coll) != 0 {
				break
			}
		}
		return groupResult(gr, accs)
	}), nil
}

// keyedRecord is the spilled form of a document and its sort key.
func keyedRecord(key bsoncore.Value, doc bsoncore.Document) bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+len(key.Data)+16))
	dst = bsoncore.AppendValueElement(dst, "k", key)
	dst = bsoncore.AppendDocumentElement(dst, "d", doc)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func recordKey(rec bsoncore.Document) bsoncore.Value {
	v, _ := value.LookupField(rec, "k")
	return v
}
