package query

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $out and $merge write the pipeline's results through the Writer. Both
// must be the last stage and output nothing.

// checkWriteStage enforces where $out/$merge may appear.
func checkWriteStage(name string, pc *pipeCtx) error {
	switch {
	case pc.within == "$lookup":
		return mongoerr.New(mongoerr.Location51047, "%s is not allowed within a $lookup's sub-pipeline", name)
	case pc.within == "$facet":
		return mongoerr.New(mongoerr.Location40600, "%s is not allowed to be used within a $facet stage", name)
	case pc.within != "":
		return mongoerr.New(mongoerr.Location31441, "%s is not allowed within a %s sub-pipeline", name, pc.within)
	case !pc.last:
		return mongoerr.New(mongoerr.Location40601, "%s can only be the final stage in the pipeline", name)
	case pc.opts.Writer == nil:
		return mongoerr.New(mongoerr.IllegalOperation, "%s is not allowed here", name)
	}
	return nil
}

// outTarget parses a target namespace: a collection name or {db, coll}.
func outTarget(name string, v bsoncore.Value, pc *pipeCtx) (db, coll string, err error) {
	db = pc.opts.DB
	switch v.Type {
	case bsoncore.TypeString:
		coll = v.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		it := value.NewIter(v.Data)
		for {
			k, e, ok := it.Next()
			if !ok {
				break
			}
			switch {
			case string(k) == "timeseries" && name == "$out":
				continue // compileOutStage reads it
			case e.Type != bsoncore.TypeString:
				return "", "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", name, k, value.TypeName(e.Type))
			case string(k) == "db":
				db = e.StringValue()
			case string(k) == "coll":
				coll = e.StringValue()
			default:
				return "", "", mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", name, k)
			}
		}
	default:
		return "", "", mongoerr.New(mongoerr.Location16990, "%s only supports a string or object argument, but found %s", name, value.TypeName(v.Type))
	}
	switch {
	case coll == "":
		return "", "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid %s target namespace, %s.%s", name, db, coll)
	case strings.HasPrefix(coll, "system."):
		return "", "", mongoerr.New(mongoerr.Location17385, "Can't %s to special collection: %s", name, coll)
	}
	return db, coll, nil
}

// withID gives a document without _id a new ObjectId, as inserts do.
func withID(d bsoncore.Document) bsoncore.Document {
	if _, ok := value.LookupField(d, "_id"); ok {
		return d
	}
	oid := bson.NewObjectID()
	return prependID(bsoncore.Value{Type: bsoncore.TypeObjectID, Data: bsoncore.AppendObjectID(nil, oid)}, d)
}

func compileOutStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if err := checkWriteStage("$out", pc); err != nil {
		return nil, err
	}
	db, coll, err := outTarget("$out", spec, pc)
	if err != nil {
		return nil, err
	}
	ts, err := outTimeseries(spec, pc)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			docs, err := Drain(ctx, in)
			if err != nil {
				return nil, err
			}
			for i, d := range docs {
				docs[i] = withID(d)
			}
			if ts != nil {
				return &sliceStream{}, pc.opts.Writer.(TimeseriesWriter).ReplaceTimeseries(ctx, db, coll, ts, docs)
			}
			return &sliceStream{}, pc.opts.Writer.Replace(ctx, db, coll, docs)
		})
	}, nil
}

// TimeseriesWriter is a Writer that can write a time-series collection,
// for $out's timeseries (MongoDB 7.0.3).
type TimeseriesWriter interface {
	// ReplaceTimeseries makes docs the measurements of the time-series
	// collection db.coll with options ts (create's timeseries), creating
	// it or replacing the measurements of one with the same options.
	ReplaceTimeseries(ctx context.Context, db, coll string, ts bsoncore.Document, docs []bsoncore.Document) error
}

// outTimeseries is $out's timeseries option (nil: none).
func outTimeseries(spec bsoncore.Value, pc *pipeCtx) (bsoncore.Document, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, nil
	}
	v, err := spec.Document().LookupErr("timeseries")
	if err != nil {
		return nil, nil
	}
	ts, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$out.timeseries' is the wrong type '%s', expected type 'object'", value.TypeName(v.Type))
	}
	if _, ok := pc.opts.Writer.(TimeseriesWriter); !ok {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "$out with timeseries is not allowed here")
	}
	return ts, nil
}

type mergeSpec struct {
	db, coll       string
	whenMatched    string
	matchedPipe    bsoncore.Value // whenMatched as a pipeline
	whenNotMatched string
	letNames       []string
	letExprs       []Expr
	on             []string // nil: _id
}

func compileMergeStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if err := checkWriteStage("$merge", pc); err != nil {
		return nil, err
	}
	m := &mergeSpec{whenMatched: "merge", whenNotMatched: "insert"}
	if spec.Type == bsoncore.TypeString {
		spec = bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: bsoncore.NewDocumentBuilder().AppendValue("into", spec).Build()}
	}
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location51182, "$merge only supports a string or object argument, but found %s", value.TypeName(spec.Type))
	}
	if err := m.parse(spec.Data, pc); err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			docs, err := Drain(ctx, in)
			if err != nil {
				return nil, err
			}
			return &sliceStream{}, pc.opts.Writer.Update(ctx, m.db, m.coll, func(t WriteTarget) error {
				if m.on != nil {
					return m.mergeOn(ctx, t, docs, pc.env)
				}
				var interrupt interrupt.Pacer
				for _, d := range docs {
					if err := interrupt.Check(ctx); err != nil {
						return err
					}
					if err := m.mergeOne(ctx, t, withID(d), pc.env); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}, nil
}

func (m *mergeSpec) parse(doc []byte, pc *pipeCtx) error {
	var into bsoncore.Value
	var let bsoncore.Value
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "into":
			into = v
		case "on":
			on, err := parseMergeOn(v)
			if err != nil {
				return err
			}
			m.on = on
		case "let":
			let = v
		case "whenMatched":
			switch {
			case v.Type == bsoncore.TypeArray:
				m.whenMatched, m.matchedPipe = "pipeline", v
			case v.Type == bsoncore.TypeString && containsString([]string{"replace", "keepExisting", "merge", "fail"}, v.StringValue()):
				m.whenMatched = v.StringValue()
			default:
				return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'whenMatched' is not a valid value.", value.Format(v))
			}
		case "whenNotMatched":
			if v.Type != bsoncore.TypeString || !containsString([]string{"insert", "discard", "fail"}, v.StringValue()) {
				return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$merge.whenNotMatched' is not a valid value.", value.Format(v))
			}
			m.whenNotMatched = v.StringValue()
		default:
			return mongoerr.New(mongoerr.Location40415, "BSON field '$merge.%s' is an unknown field.", k)
		}
	}
	if into.Type == 0 {
		return mongoerr.New(mongoerr.Location40414, "BSON field '$merge.into' is missing but a required field")
	}
	var err error
	if m.db, m.coll, err = outTarget("$merge", into, pc); err != nil {
		return err
	}
	if let.Type != 0 && m.matchedPipe.Type == 0 {
		return mongoerr.New(mongoerr.Location51199, "Cannot use 'let' variables with 'whenMatched: %s' mode", m.whenMatched)
	}
	if err := m.compileLet(let, pc); err != nil || m.matchedPipe.Type == 0 {
		return err
	}
	_, err = compileUpdatePipeline(m.matchedPipe.Data, pc.env.withVars(m.letNames, make([]bsoncore.Value, len(m.letNames))))
	return err
}

// parseMergeOn reads 'on': a field or an array of distinct fields; nil
// when it is just _id, which needs no index.
func parseMergeOn(v bsoncore.Value) ([]string, error) {
	fields := []bsoncore.Value{v}
	switch v.Type {
	case bsoncore.TypeString:
	case bsoncore.TypeArray:
		fields = value.ArrayValues(v.Data)
		if len(fields) == 0 {
			return nil, mongoerr.New(mongoerr.Location51187, "If explicitly specifying $merge 'on', must include at least one field")
		}
	default:
		return nil, mongoerr.New(mongoerr.Location51186, "BSON field '$merge.on' must be either a string or an array of strings, but found %s", value.TypeName(v.Type))
	}
	var on []string
	seen := map[string]bool{}
	for _, f := range fields {
		if f.Type != bsoncore.TypeString {
			return nil, mongoerr.New(mongoerr.Location51134, "$merge 'on' array elements must be strings, but found %s", value.TypeName(f.Type))
		}
		name := f.StringValue()
		if err := value.CheckNoNul(name); err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, mongoerr.New(mongoerr.Location31465, "Found a duplicate field '%s'", name)
		}
		seen[name] = true
		on = append(on, name)
	}
	if len(on) == 1 && on[0] == "_id" {
		return nil, nil
	}
	return on, nil
}

// mergeOn merges on fields other than _id: the target needs a unique
// index on exactly those fields, through which each document finds its
// match.
func (m *mergeSpec) mergeOn(ctx context.Context, t WriteTarget, docs []bsoncore.Document, env *Env) error {
	kt, ok := t.(KeyedWriteTarget)
	if !ok || !kt.HasUniqueIndex(m.on) {
		return mongoerr.New(mongoerr.Location51183, "Cannot find index to verify that join fields will be unique")
	}
	var interrupt interrupt.Pacer
	for _, d := range docs {
		if err := interrupt.Check(ctx); err != nil {
			return err
		}
		vals := make([]bsoncore.Value, len(m.on))
		for i, f := range m.on {
			v := evalPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, value.SplitPath(f))
			if nullish(v) || v.Type == bsoncore.TypeArray {
				return mongoerr.New(mongoerr.Location51132, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", f)
			}
			vals[i] = v
		}
		cands, err := kt.FindBy(ctx, m.on, vals)
		if err != nil {
			return err
		}
		var old bsoncore.Document
		for _, c := range cands {
			if m.onEqual(c, vals) {
				old = c
				break
			}
		}
		if err := m.mergeMatched(ctx, t, d, old, vals, env); err != nil {
			return err
		}
	}
	return nil
}

func (m *mergeSpec) onEqual(d bsoncore.Document, vals []bsoncore.Value) bool {
	for i, f := range m.on {
		v := evalPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, value.SplitPath(f))
		if v.Type == 0 || value.Compare(v, vals[i]) != 0 {
			return false
		}
	}
	return true
}

// mergeMatched applies whenMatched/whenNotMatched for a document matched
// on m.on (old nil: no match). The target document keeps its _id: an
// incoming document without one takes it, one with another fails.
func (m *mergeSpec) mergeMatched(ctx context.Context, t WriteTarget, d, old bsoncore.Document, vals []bsoncore.Value, env *Env) error {
	if old == nil {
		switch m.whenNotMatched {
		case "insert":
			return t.Insert(ctx, withID(d))
		case "fail":
			return mongoerr.New(mongoerr.Location13113, "$merge could not find a matching document in the target collection for at least one document in the source collection")
		}
		return nil
	}
	oldID, _ := value.LookupField(old, "_id")
	keepID := func(out bsoncore.Document) (bsoncore.Document, error) {
		id, ok := value.LookupField(out, "_id")
		if !ok {
			return prependID(oldID, out), nil
		}
		if value.Compare(id, oldID) != 0 || id.Type != oldID.Type {
			return nil, mongoerr.New(mongoerr.ImmutableField, "$merge failed to update the matching document, did you attempt to modify the _id or the shard key? :: caused by :: Performing an update on the path '_id' would modify the immutable field '_id'")
		}
		return out, nil
	}
	var out bsoncore.Document
	switch m.whenMatched {
	case "keepExisting":
		return nil
	case "fail":
		pattern, key := bsoncore.NewDocumentBuilder(), bsoncore.NewDocumentBuilder()
		var shown []string
		for i, f := range m.on {
			pattern.AppendInt32(f, 1)
			key.AppendValue(f, vals[i])
			shown = append(shown, value.FormatElem(f, vals[i]))
		}
		err := mongoerr.New(mongoerr.DuplicateKey, "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields: { %s }", strings.Join(shown, ", "))
		err.Info = bsoncore.NewDocumentBuilder().AppendDocument("keyPattern", pattern.Build()).
			AppendDocument("keyValue", key.Build()).Build()
		return err
	case "replace":
		out = d
	case "merge":
		acc := &mergeObjectsAcc{m: newDocM()}
		acc.addValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: old})
		acc.addValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
		v, _ := acc.result()
		out = v.Data
	default:
		var err error
		if out, err = m.applyPipeline(old, d, env); err != nil {
			return err
		}
	}
	out, err := keepID(out)
	if err != nil {
		return err
	}
	return t.Replace(ctx, out)
}

// compileLet binds the whenMatched pipeline's variables; by default $$new
// is the incoming document.
func (m *mergeSpec) compileLet(let bsoncore.Value, pc *pipeCtx) error {
	if let.Type == 0 {
		m.letNames = []string{"new"}
		m.letExprs = []Expr{&pathExprX{base: "ROOT"}}
		return nil
	}
	if let.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$merge.let' is the wrong type '%s', expected type 'object'", value.TypeName(let.Type))
	}
	it := value.NewIter(let.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		x, err := compileExpr(v, pc.env.scope())
		if err != nil {
			return err
		}
		m.letNames = append(m.letNames, string(k))
		m.letExprs = append(m.letExprs, x)
	}
}

func (m *mergeSpec) mergeOne(ctx context.Context, t WriteTarget, d bsoncore.Document, env *Env) error {
	id, _ := value.LookupField(d, "_id")
	old, found, err := t.Get(ctx, id)
	if err != nil {
		return err
	}
	if !found {
		switch m.whenNotMatched {
		case "insert":
			return t.Insert(ctx, d)
		case "fail":
			return mongoerr.New(mongoerr.Location13113, "$merge could not find a matching document in the target collection for at least one document in the source collection")
		}
		return nil
	}
	switch m.whenMatched {
	case "replace":
		return t.Replace(ctx, d)
	case "keepExisting":
		return nil
	case "fail":
		err := mongoerr.New(mongoerr.DuplicateKey, "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields: %s", value.FormatElem("_id", id))
		err.Info = bsoncore.NewDocumentBuilder().
			AppendDocument("keyPattern", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
			AppendDocument("keyValue", bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()).Build()
		return err
	case "merge":
		acc := &mergeObjectsAcc{m: newDocM()}
		acc.addValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: old})
		acc.addValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
		v, _ := acc.result()
		return t.Replace(ctx, v.Data)
	}
	out, err := m.applyPipeline(old, d, env)
	if err != nil {
		return err
	}
	return t.Replace(ctx, out)
}

// applyPipeline runs whenMatched's update pipeline on the existing
// document with the let variables evaluated against the incoming one.
func (m *mergeSpec) applyPipeline(old, incoming bsoncore.Document, env *Env) (bsoncore.Document, error) {
	c := newEvalCtx(incoming, env)
	vals := make([]bsoncore.Value, len(m.letExprs))
	for i, x := range m.letExprs {
		v, err := x.eval(c)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	u, err := compileUpdatePipeline(m.matchedPipe.Data, env.withVars(m.letNames, vals))
	if err != nil {
		return nil, err
	}
	out, _, err := u.applyPipeline(old, false)
	return out, err
}
