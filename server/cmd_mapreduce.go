package server

import (
	"errors"
	"io"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// mapReduce: the documents of query (sorted, limited) go through map,
// whose emit(key, value) calls are grouped by key; each key's values go
// through reduce (also a key with one value, as mongod 8's aggregation
// of mapReduce does), then finalize. The results are {_id: key, value} documents, returned
// inline or written as an aggregation's $out or $merge writes them, so
// that validation, bypassDocumentValidation, authorization and the write
// path are the aggregate command's. All JavaScript runs in one session of
// the server's engine, with scope's variables as globals.

// mapReduceArgs are the command's fields.
type mapReduceArgs struct {
	coll                          string
	mapFn, reduceFn, finalize     *js.Func
	out                           mrOut
	query, sort, scope, collation bsoncore.Document
	limit                         int64
	limitGiven                    bool
	bypass                        bool
}

// mrOut is where the results go: inline, or a collection with an action.
type mrOut struct {
	inline     bool
	action     string // "replace", "merge" or "reduce"
	db, coll   string
	dbExplicit bool // the reply names the database too
}

// maxEmitBytes bounds what one map call emits (mongod's
// internalQueryMaxJsEmitBytes); maxHeldEmitBytes what one command's
// emits hold together, all in memory until they are reduced (mongod's
// $group would spill them; DumboDB refuses past it).
const (
	maxEmitBytes     = 100 << 20
	maxHeldEmitBytes = 256 << 20
)

func cmdMapReduce(r *request) (bsoncore.Document, error) {
	a, err := r.parseMapReduce()
	if err != nil {
		return nil, err
	}
	if isView, err := r.isView(a.coll); err != nil || isView {
		if err == nil {
			err = mongoerr.New(mongoerr.CommandNotSupportedOnView, "mapReduce on a view is not supported")
		}
		return nil, err
	}
	reply, err := r.runMapReduce(a)
	if err != nil {
		return nil, withContext("MapReduce internal error", err)
	}
	return reply, nil
}

// withContext prefixes err's message as mongod's addContext does.
func withContext(context string, err error) error {
	me := *mongoerr.As(err)
	me.Msg = context + " :: caused by :: " + me.Msg
	return &me
}

// runMapReduce runs a parsed mapReduce; its errors are mongod's
// execution errors, which the reply gives context.
func (r *request) runMapReduce(a *mapReduceArgs) (bsoncore.Document, error) {
	src, err := r.mapReduceInput(a)
	if err != nil {
		return nil, err
	}
	defer closeSource(src)
	env, err := r.collEnv(a.coll, a.collation, nil)
	if err != nil {
		return nil, err
	}
	s := r.c.s.js.Acquire(r.jsScope())
	defer s.Release()
	s.SetContext(r.ctx)
	for _, k := range docKeys(a.scope) {
		if err := s.SetGlobal(k, a.scope.Lookup(k)); err != nil {
			return nil, err
		}
	}
	groups, err := runMap(r, s, a, src, env.Collation)
	if err != nil {
		return nil, err
	}
	results, err := reduceGroups(r, s, a, groups)
	if err != nil {
		return nil, err
	}
	if a.out.inline {
		arr := bsoncore.NewArrayBuilder()
		for _, d := range results {
			arr.AppendDocument(d)
		}
		reply := bsoncore.NewDocumentBuilder().AppendArray("results", arr.Build()).AppendDouble("ok", 1).Build()
		if len(reply) > js.DefaultMaxValueBytes { // mongod's BSONObjMaxInternalSize
			return nil, mongoerr.New(mongoerr.BSONObjectTooLarge, "BSONObj size: %d (0x%X) is invalid. Size must be between 0 and %d(16MB) First element: results: ...", len(reply), len(reply), js.DefaultMaxValueBytes)
		}
		return reply, nil
	}
	if err := r.writeMapReduce(s, a, results); err != nil {
		return nil, err
	}
	reply := bsoncore.NewDocumentBuilder()
	if a.out.dbExplicit {
		reply.AppendDocument("result", bsoncore.NewDocumentBuilder().
			AppendString("db", a.out.db).AppendString("collection", a.out.coll).Build())
	} else {
		reply.AppendString("result", a.out.coll)
	}
	return reply.AppendDouble("ok", 1).Build(), nil
}

func (r *request) parseMapReduce() (*mapReduceArgs, error) {
	a := &mapReduceArgs{}
	coll, err := r.collectionArg()
	if err != nil {
		return nil, err
	}
	a.coll = coll
	var outV bsoncore.Value
	err = r.parseArgs(map[string]fieldHandler{
		"map":       r.codeArg("map", &a.mapFn),
		"reduce":    r.codeArg("reduce", &a.reduceFn),
		"finalize":  r.optCodeArg("finalize", &a.finalize),
		"out":       func(v bsoncore.Value) error { outV = v; return nil },
		"query":     r.optDocArg("query", &a.query),
		"sort":      r.optDocArg("sort", &a.sort),
		"scope":     r.optDocArg("scope", &a.scope),
		"collation": r.optDocArg("collation", &a.collation),
		"limit": func(v bsoncore.Value) error {
			a.limitGiven = true
			return r.int64Arg("limit", &a.limit)(v)
		},
		"bypassDocumentValidation": r.boolArg("bypassDocumentValidation", &a.bypass),
		// Ignored on purpose, as mongod 8 ignores them: jsMode chose an
		// execution strategy mongod no longer has; verbose shapes only
		// explain output. Neither changes a result.
		"jsMode":  r.boolArg("jsMode", new(bool)),
		"verbose": r.boolArg("verbose", new(bool)),
	})
	if err != nil {
		return nil, err
	}
	for field, missing := range map[string]bool{"map": a.mapFn == nil, "reduce": a.reduceFn == nil, "out": outV.Type == 0} {
		if missing {
			return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", r.name, field)
		}
	}
	if a.out, err = r.parseMROut(outV); err != nil {
		return nil, err
	}
	return a, a.checkTranslation()
}

// checkTranslation refuses what mongod's translation into an aggregation
// refuses: a limit that is not positive, an empty sort.
func (a *mapReduceArgs) checkTranslation() error {
	if a.limitGiven && a.limit <= 0 {
		return mongoerr.New(mongoerr.Location15958, "The limit specified to mapReduce must be positive")
	}
	if a.sort != nil && len(a.sort) <= 5 {
		return mongoerr.New(mongoerr.Location15976, "The mapReduce sort option must have at least one sort key")
	}
	return nil
}

// codeArg compiles a function given as code or a string (code with
// scope is refused, as mongod 4.4 and later refuse it: scope replaces it).
func (r *request) codeArg(field string, dst **js.Func) fieldHandler {
	return func(v bsoncore.Value) error {
		var src string
		switch v.Type {
		case bsoncore.TypeJavaScript:
			src = v.JavaScript()
		case bsoncore.TypeString:
			src = v.StringValue()
		default:
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[string, javascript]'",
				r.name, field, value.TypeName(v.Type))
		}
		f, err := js.Compile(src)
		if err != nil {
			return err
		}
		*dst = f
		return nil
	}
}

func (r *request) optCodeArg(field string, dst **js.Func) fieldHandler {
	return func(v bsoncore.Value) error {
		if v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			return nil
		}
		return r.codeArg(field, dst)(v)
	}
}

// parseMROut reads out as mongod's MapReduceOutOptions does: a collection
// name (replace), {inline: 1} alone, or {replace|merge|reduce: <coll>}
// with optional db, sharded and nonAtomic (both only true).
func (r *request) parseMROut(v bsoncore.Value) (mrOut, error) {
	o := mrOut{db: r.db, action: "replace"}
	switch v.Type {
	case bsoncore.TypeString:
		o.coll = v.StringValue()
		return o, r.checkMROutNS(o)
	case bsoncore.TypeEmbeddedDocument:
	default:
		return o, mongoerr.New(mongoerr.BadValue, "'out' must be either a string or an object")
	}
	doc := bsoncore.Document(v.Data)
	if in, err := doc.LookupErr("inline"); err == nil {
		if value.ArrayLen(v.Data) != 1 {
			return o, mongoerr.New(mongoerr.InvalidOptions, "'inline' must be specified alone")
		}
		if f, ok := in.AsFloat64OK(); !ok || f != 1 {
			return o, mongoerr.New(mongoerr.BadValue, "'inline' takes only numeric '1'")
		}
		o.inline = true
		return o, nil
	}
	fields := 4
	sharded, err := mrOutTrue(doc, "sharded")
	if err != nil {
		return o, err
	}
	if !sharded {
		fields--
	}
	found := false
	for _, action := range []string{"replace", "merge", "reduce"} {
		if e, err := doc.LookupErr(action); err == nil {
			if e.Type != bsoncore.TypeString {
				return o, mongoerr.New(mongoerr.BadValue, "'%s' supports only string consisting of output collection name", action)
			}
			o.action, o.coll, found = action, e.StringValue(), true
			break
		}
	}
	if !found {
		return o, mongoerr.New(mongoerr.BadValue, "'out' requires 'replace', 'merge' or 'reduce'")
	}
	if e, err := doc.LookupErr("db"); err == nil {
		if e.Type != bsoncore.TypeString {
			return o, mongoerr.New(mongoerr.BadValue, "db field value must be string")
		}
		o.db, o.dbExplicit = e.StringValue(), true
		if o.db == "admin" || o.db == "local" || o.db == "config" {
			return o, mongoerr.New(mongoerr.CommandNotSupported, "cannot target internal database as output")
		}
	} else {
		fields--
	}
	nonAtomic, err := mrOutTrue(doc, "nonAtomic")
	if err != nil {
		return o, err
	}
	if !nonAtomic {
		fields--
	}
	if value.ArrayLen(v.Data) != fields {
		return o, mongoerr.New(mongoerr.BadValue, "'out' supports only output type with collection name, optional 'sharded' and optional 'db'")
	}
	if sharded {
		// a one-member replica set has no sharded collection to write to
		if o.action == "replace" {
			return o, mongoerr.New(mongoerr.InvalidOptions, "Combination of 'out.sharded' and 'replace' output mode is not supported. Cannot replace an existing sharded collection or create a new sharded collection. Please create the sharded collection first and use a different output mode or consider using an unsharded collection.")
		}
		return o, mongoerr.New(mongoerr.InvalidOptions, "Cannot use mapReduce to create a new sharded collection. Please create and shard the target collection before proceeding.")
	}
	return o, r.checkMROutNS(o)
}

// mrOutTrue reads an out flag that may only be true (sharded,
// nonAtomic): whether it is present.
func mrOutTrue(doc bsoncore.Document, name string) (bool, error) {
	e, err := doc.LookupErr(name)
	if err != nil {
		return false, nil
	}
	b, ok := e.BooleanOK()
	if !ok {
		return false, mongoerr.New(mongoerr.BadValue, "%s field value must be boolean", name)
	}
	if !b {
		return false, mongoerr.New(mongoerr.BadValue, "%s field value must be true", name)
	}
	return true, nil
}

// checkMROutNS refuses an output namespace as mongod's translation does.
func (r *request) checkMROutNS(o mrOut) error {
	if o.coll == "" || strings.ContainsRune(o.coll, 0) || strings.HasPrefix(o.coll, ".") || strings.HasPrefix(o.coll, "$") {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid output namespace %s.%s for MapReduce", o.db, o.coll)
	}
	if strings.HasPrefix(o.coll, "system.") {
		return mongoerr.New(mongoerr.Location31319, "Can't output mapReduce results to special collection %s", o.coll)
	}
	return nil
}

// mapReduceInput reads query's documents, sorted and limited, through the
// aggregate path (so collations and indexes work as for a $match).
func (r *request) mapReduceInput(a *mapReduceArgs) (docSource, error) {
	var stages []bsoncore.Document
	stages = append(stages, bsoncore.NewDocumentBuilder().AppendDocument("$match", value.OrEmpty(a.query)).Build())
	if len(a.sort) > 0 {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendDocument("$sort", a.sort).Build())
	}
	if a.limit > 0 {
		stages = append(stages, bsoncore.NewDocumentBuilder().AppendInt64("$limit", a.limit).Build())
	}
	src, _, _, err := r.aggregateSource(&aggregateArgs{coll: a.coll, pipeline: stagesArray(stages), collation: a.collation})
	return src, err
}

// mrGroup is one emitted key with its values.
type mrGroup struct {
	key  bsoncore.Value
	vals []bsoncore.Value
}

// runMap calls map on each document and groups what it emits by key,
// under the command's collation; the groups come back in key order.
func runMap(r *request, s *js.Session, a *mapReduceArgs, src docSource, coll *value.Collation) ([]*mrGroup, error) {
	type pair struct{ key, val bsoncore.Value }
	var pairs []pair
	held, perCall := 0, 0
	s.OnEmit(func(k, v bsoncore.Value) error {
		if k.Type == bsoncore.TypeUndefined {
			k = value.Null // as mongod's emit keys an undefined key
		}
		n := len(k.Data) + len(v.Data) + 32
		if perCall += n; perCall >= maxEmitBytes {
			return mongoerr.New(mongoerr.Location31292, "Size of emitted values exceeds the set size limit of %d bytes", maxEmitBytes)
		}
		if held += n; held > maxHeldEmitBytes {
			return mongoerr.New(mongoerr.ExceededMemoryLimit, "mapReduce's emitted values exceed the %d bytes DumboDB holds for one command", maxHeldEmitBytes)
		}
		pairs = append(pairs, pair{k, v})
		return nil
	})
	for {
		d, err := src.Next(r.ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !r.c.s.js.Enabled() {
			// mongod's emit, which runs map, is where --noscripting refuses
			return nil, mongoerr.New(mongoerr.Location31246, "Cannot run server-side javascript without the javascript engine enabled")
		}
		perCall = 0
		if _, err := s.Call(a.mapFn, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(pairs, func(i, j int) bool { return value.CompareWith(pairs[i].key, pairs[j].key, coll) < 0 })
	var groups []*mrGroup
	for _, p := range pairs {
		if n := len(groups); n > 0 && value.CompareWith(groups[n-1].key, p.key, coll) == 0 {
			groups[n-1].vals = append(groups[n-1].vals, p.val)
			continue
		}
		groups = append(groups, &mrGroup{key: p.key, vals: []bsoncore.Value{p.val}})
	}
	return groups, nil
}

// reduceGroups reduces and finalizes each group into {_id, value}.
func reduceGroups(r *request, s *js.Session, a *mapReduceArgs, groups []*mrGroup) ([]bsoncore.Document, error) {
	out := make([]bsoncore.Document, 0, len(groups))
	var check interrupt.Pacer
	for _, g := range groups {
		if err := check.Check(r.ctx); err != nil {
			return nil, err
		}
		v, err := reduceValues(s, a.reduceFn, g.key, g.vals)
		if err != nil {
			return nil, err
		}
		if v, err = finalizeValue(s, a, g.key, v); err != nil {
			return nil, err
		}
		out = append(out, resultDoc(g.key, v))
	}
	return out, nil
}

// reduceBatchBytes bounds the values one reduce call gets (mongod's
// BSONObjMaxUserSize): more are reduced in batches, each batch's result
// joining the rest.
const reduceBatchBytes = 16 << 20

// reduceValues reduces a key's values as mongod's $_internalJsReduce
// does: reduce runs even for one value; a batch takes the values from the
// last emitted back, and its result joins the values left until one is.
func reduceValues(s *js.Session, reduce *js.Func, key bsoncore.Value, vals []bsoncore.Value) (bsoncore.Value, error) {
	vals = append([]bsoncore.Value(nil), vals...)
	for {
		left, size := len(vals), len(key.Data)
		var batch []bsoncore.Value
		for ; left > 0; left-- {
			v := vals[left-1]
			if size+len(v.Data) > reduceBatchBytes {
				if len(batch) <= 1 {
					return bsoncore.Value{}, mongoerr.New(mongoerr.Location31392, "Value too large to reduce")
				}
				break
			}
			size += len(v.Data)
			batch = append(batch, v)
		}
		out, err := s.Call(reduce, bsoncore.Value{}, key, value.BuildArray(batch))
		if err != nil {
			return bsoncore.Value{}, err
		}
		if left == 0 {
			return out, nil
		}
		vals = append(vals[:left], out)
	}
}

func finalizeValue(s *js.Session, a *mapReduceArgs, key, v bsoncore.Value) (bsoncore.Value, error) {
	if a.finalize == nil {
		return v, nil
	}
	return s.Call(a.finalize, bsoncore.Value{}, key, v)
}

func resultDoc(key, v bsoncore.Value) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue("_id", key).AppendValue("value", v).Build()
}

// writeMapReduce writes the results as out says: replace is $out, merge
// is $merge replacing documents of the same _id, reduce first reduces
// each result with the value already stored under its key (then
// finalizes it again) and merges the outcome.
func (r *request) writeMapReduce(s *js.Session, a *mapReduceArgs, results []bsoncore.Document) error {
	if a.out.action == "reduce" {
		var err error
		if results, err = r.reduceWithExisting(s, a, results); err != nil {
			return err
		}
	}
	into := bsoncore.NewDocumentBuilder().AppendString("db", a.out.db).AppendString("coll", a.out.coll).Build()
	var last bsoncore.Document
	if a.out.action == "replace" {
		last = bsoncore.NewDocumentBuilder().AppendDocument("$out", into).Build()
	} else {
		last = bsoncore.NewDocumentBuilder().AppendDocument("$merge", bsoncore.NewDocumentBuilder().
			AppendDocument("into", into).AppendString("on", "_id").
			AppendString("whenMatched", "replace").AppendString("whenNotMatched", "insert").Build()).Build()
	}
	arr := bsoncore.NewArrayBuilder()
	for _, d := range results {
		arr.AppendDocument(d)
	}
	stages := []bsoncore.Document{
		bsoncore.NewDocumentBuilder().AppendArray("$documents", arr.Build()).Build(),
		last,
	}
	src, _, _, err := r.aggregateSource(&aggregateArgs{collectionless: true, pipeline: stagesArray(stages), bypass: a.bypass})
	if err != nil {
		return err
	}
	defer closeSource(src)
	for {
		if _, err := src.Next(r.ctx); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// reduceWithExisting reduces each result with the document of the same
// _id in the output collection, if there is one.
func (r *request) reduceWithExisting(s *js.Session, a *mapReduceArgs, results []bsoncore.Document) ([]bsoncore.Document, error) {
	out := make([]bsoncore.Document, 0, len(results))
	for _, d := range results {
		key := d.Lookup("_id")
		existing, err := r.outputDoc(a.out, key)
		if err != nil {
			return nil, err
		}
		if existing == nil {
			out = append(out, d)
			continue
		}
		v, err := reduceValues(s, a.reduceFn, key, []bsoncore.Value{existing.Lookup("value"), d.Lookup("value")})
		if err != nil {
			return nil, err
		}
		if v, err = finalizeValue(s, a, key, v); err != nil {
			return nil, err
		}
		out = append(out, resultDoc(key, v))
	}
	return out, nil
}

// outputDoc is the output collection's document of _id key (nil: none).
func (r *request) outputDoc(o mrOut, key bsoncore.Value) (bsoncore.Document, error) {
	snap, err := r.snapshotOf(o.db)
	if err != nil {
		return nil, err
	}
	if _, ok := snap.Collection(o.coll); !ok {
		return nil, nil
	}
	d, ok, err := snap.Get(r.ctx, o.coll, key)
	if err != nil || !ok {
		return nil, err
	}
	return d, nil
}

// snapshotOf is snapshot for database db.
func (r *request) snapshotOf(db string) (*storage.Snapshot, error) {
	saved := r.db
	r.db = db
	defer func() { r.db = saved }()
	return r.snapshot()
}

func docKeys(doc bsoncore.Document) []string {
	var keys []string
	it := value.NewIter(doc)
	for {
		k, _, ok := it.Next()
		if !ok {
			return keys
		}
		keys = append(keys, string(k))
	}
}
