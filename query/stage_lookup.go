package query

import (
	"context"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
)

// Stages that read other collections through the Catalog: $lookup,
// $graphLookup and $unionWith. Each loads the foreign collection once per
// run and, for equality matches, indexes it by the foreign field so a
// join costs a hash probe per local value rather than a scan.

func init() {
	stageCompilers["$lookup"] = compileLookupStage
	stageCompilers["$unionWith"] = compileUnionWithStage
	stageCompilers["$graphLookup"] = compileGraphLookupStage
}

// withVars returns an Env that adds variables to e.
func (e *Env) withVars(names []string, vals []bsoncore.Value) *Env {
	n := &Env{Collation: e.coll(), vars: map[string]bsoncore.Value{}}
	if e != nil {
		n.now = e.now
		for k, v := range e.vars {
			n.vars[k] = v
		}
	} else {
		n.now = mkDate(0)
	}
	for i, name := range names {
		n.vars[name] = vals[i]
	}
	return n
}

// scanCollection streams another collection of the database; a pipeline
// without a Catalog, or a stage without a collection ($documents in a
// sub-pipeline), reads none.
func scanCollection(ctx context.Context, pc *pipeCtx, coll string) (Stream, error) {
	if pc.opts.Catalog == nil || coll == "" {
		return &sliceStream{}, nil
	}
	return pc.opts.Catalog.Scan(ctx, coll)
}

// foreignColl is the collection $lookup or $graphLookup joins with. It is
// loaded once, and indexed by the joined field, as long as it fits in the
// memory limit, as mongod builds a hash join's table; past the limit it
// is scanned again for every probe instead, as mongod's nested-loop join
// does, so that memory stays bounded whatever the collection's size.
type foreignColl struct {
	pc     *pipeCtx
	name   string
	path   string // the field joined by equality ("" for none)
	loaded bool
	held   bool // docs hold the whole collection
	docs   []bsoncore.Document
	fi     *foreignIndex // on path, when held
}

func (f *foreignColl) load(ctx context.Context) error {
	if f.loaded {
		return nil
	}
	f.loaded = true
	s, err := scanCollection(ctx, f.pc, f.name)
	if err != nil {
		return err
	}
	var size int64
	for {
		d, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if size += int64(len(d)); size > f.pc.opts.MemoryLimit {
			f.docs = nil // scanned from now on
			return nil
		}
		f.docs = append(f.docs, d)
	}
	f.held = true
	if f.path != "" {
		f.fi, err = newForeignIndex(ctx, f.docs, f.path, f.pc.env.coll())
	}
	return err
}

// all streams the whole collection.
func (f *foreignColl) all(ctx context.Context) (Stream, error) {
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	if f.held {
		return &sliceStream{docs: f.docs}, nil
	}
	return scanCollection(ctx, f.pc, f.name)
}

// candidates streams, in collection order, documents among which are all
// those whose path may equal one of vals; callers confirm with a filter.
func (f *foreignColl) candidates(ctx context.Context, vals []bsoncore.Value) (Stream, error) {
	if err := f.load(ctx); err != nil {
		return nil, err
	}
	if f.held {
		return &sliceStream{docs: f.fi.candidates(vals)}, nil
	}
	return scanCollection(ctx, f.pc, f.name)
}

// foreignIndex maps the values at one path of a document set to the
// positions of the documents holding them (missing and null key as null).
type foreignIndex struct {
	docs []bsoncore.Document
	coll *Collation
	idx  map[string][]int
}

func newForeignIndex(ctx context.Context, docs []bsoncore.Document, path string, coll *Collation) (*foreignIndex, error) {
	fi := &foreignIndex{docs: docs, coll: coll, idx: map[string][]int{}}
	parts := splitPath(path)
	var interrupt InterruptCheck
	for i, d := range docs {
		if err := interrupt.Check(ctx); err != nil {
			return nil, err
		}
		vals := pathValues(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}, parts)
		if len(vals) == 0 {
			vals = []bsoncore.Value{nullValue}
		}
		keys := map[string]bool{}
		for _, v := range vals {
			keys[fi.key(v)] = true
			if v.Type == bsoncore.TypeArray {
				if arrayLen(v.Data) == 0 {
					keys[fi.key(bsoncore.Value{Type: bsoncore.TypeUndefined})] = true
				}
				for _, e := range arrayValues(v.Data) {
					keys[fi.key(e)] = true
				}
			}
		}
		for k := range keys {
			fi.idx[k] = append(fi.idx[k], i)
		}
	}
	return fi, nil
}

// key is a coarse key: equal values always share it. Under a collation,
// strings that differ in bytes may be equal, so they all share one key.
func (fi *foreignIndex) key(v bsoncore.Value) string {
	if nullish(v) {
		return "null"
	}
	if fi.coll != nil && v.Type == bsoncore.TypeString {
		return "s"
	}
	return bucketKey(v)
}

// candidates returns, in collection order, the documents that may hold
// one of vals; callers confirm with a filter.
func (fi *foreignIndex) candidates(vals []bsoncore.Value) []bsoncore.Document {
	seen := map[int]bool{}
	var pos []int
	for _, v := range vals {
		for _, i := range fi.idx[fi.key(v)] {
			if !seen[i] {
				seen[i] = true
				pos = append(pos, i)
			}
		}
	}
	sort.Ints(pos)
	out := make([]bsoncore.Document, len(pos))
	for j, i := range pos {
		out[j] = fi.docs[i]
	}
	return out
}

// inFilters caches the compiled {path: {$in: vals}} filters of one
// $lookup run by their values, so that input documents joining on the
// same values do not compile the filter again. A nil cache compiles
// every time.
type inFilters struct{ m map[string]*Filter }

const maxCachedInFilters = 4096

// in is the filter keeping the documents whose path equals one of vals,
// with the query language's equality ({path: {$in: vals}}).
func (c *inFilters) in(path string, vals []bsoncore.Value, env *Env) (*Filter, error) {
	in := bsoncore.NewArrayBuilder()
	for _, v := range vals {
		in.AppendValue(v)
	}
	arr := in.Build()
	if c != nil && c.m[string(arr)] != nil {
		return c.m[string(arr)], nil
	}
	f, err := CompileFilterEnv(bsoncore.NewDocumentBuilder().
		AppendDocument(path, bsoncore.NewDocumentBuilder().AppendArray("$in", arr).Build()).Build(), env)
	if err != nil {
		return nil, err
	}
	if c != nil {
		if c.m == nil || len(c.m) >= maxCachedInFilters {
			c.m = map[string]*Filter{}
		}
		c.m[string(arr)] = f
	}
	return f, nil
}

// EqualityCatalog is a Catalog that can find a collection's documents by
// equality on one field through an index, so that $lookup probes the
// foreign collection per input document instead of loading it whole.
type EqualityCatalog interface {
	Catalog
	// LookupEqual returns, in the collection's (_id) order, documents of
	// coll among which are all those whose path equals one of vals by the
	// query language's binary equality ({path: {$in: vals}}, no
	// collation); the caller filters them. ok is false when no index
	// serves path and these values; the caller then scans.
	LookupEqual(ctx context.Context, coll, path string, vals []bsoncore.Value) (docs []bsoncore.Document, ok bool, err error)
}

// localValues are the values a local field joins on: the elements of an
// array, null for missing.
func localValues(v bsoncore.Value) []bsoncore.Value {
	switch {
	case v.Type == 0:
		return []bsoncore.Value{nullValue}
	case v.Type == bsoncore.TypeArray:
		return arrayValues(v.Data)
	}
	return []bsoncore.Value{v}
}

type lookupSpec struct {
	from          string
	localField    string
	foreignField  string
	as            string
	letNames      []string
	letExprs      []Expr
	pipeline      bsoncore.Value // TypeArray, or zero
	hasPipeline   bool
	subCtx        pipeCtx
	fixedPipeline *Pipeline // compiled once when there is no let
	// probeField and probeVar are set when the sub-pipeline starts with
	// {$match: {$expr: {$eq: ["$probeField", "$$<let variable probeVar>"]}}}:
	// an index on probeField can then give the candidates per local
	// document instead of the whole foreign collection.
	probeField string
	probeVar   int
}

func compileLookupStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $lookup stage specification must be an object, but found %s", typeName(spec.Type))
	}
	l := &lookupSpec{}
	var hasLocal, hasForeign bool
	it := newIter(spec.Data)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		key := string(k)
		switch key {
		case "from":
			name, err := lookupFrom(v, pc)
			if err != nil {
				return nil, err
			}
			l.from = name
			continue
		case "let":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'let' must be an object, is type %s", typeName(v.Type))
			}
			if err := l.compileLet(v.Data, pc); err != nil {
				return nil, err
			}
			continue
		case "pipeline":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'pipeline' must be an array, is type %s", typeName(v.Type))
			}
			l.pipeline, l.hasPipeline = v, true
			continue
		}
		if v.Type != bsoncore.TypeString {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument '%s: %s' must be a string, is type %s", key, formatValue(v), typeName(v.Type))
		}
		switch key {
		case "localField":
			l.localField, hasLocal = v.StringValue(), true
		case "foreignField":
			l.foreignField, hasForeign = v.StringValue(), true
		case "as":
			l.as = v.StringValue()
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "unknown argument to $lookup: %s", key)
		}
	}
	switch {
	case l.as == "":
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'as' field for a $lookup")
	case hasLocal != hasForeign || (!hasLocal && !l.hasPipeline):
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified")
	case l.from == "" && !l.startsWithDocuments():
		return nil, mongoerr.New(mongoerr.FailedToParse, "must specify 'from' field for a $lookup")
	case l.letNames != nil && !l.hasPipeline:
		return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup with 'let' requires a 'pipeline'")
	}
	if l.hasPipeline {
		if l.from != "" {
			l.probeField, l.probeVar = exprEqualityProbe(l.pipeline, l.letNames)
		}
		l.subCtx = pipeCtx{opts: pc.opts, env: pc.env.withVars(l.letNames, make([]bsoncore.Value, len(l.letNames))), within: "$lookup"}
		p, err := compileStages(l.pipeline, &l.subCtx)
		if err != nil {
			return nil, err
		}
		if l.letNames == nil {
			l.fixedPipeline = p
		}
	}
	return func(in Stream) Stream { return l.run(in, pc) }, nil
}

// LookupProbeField is the foreign field whose index a $lookup of the
// let/pipeline form probes for each local document ("" when it loads the
// foreign collection instead): see exprEqualityProbe.
func LookupProbeField(spec bsoncore.Document) string {
	if _, err := spec.LookupErr("localField"); err == nil {
		return ""
	}
	pipeline, err := spec.LookupErr("pipeline")
	if err != nil || pipeline.Type != bsoncore.TypeArray {
		return ""
	}
	let, _ := spec.Lookup("let").DocumentOK()
	els, _ := let.Elements()
	names := make([]string, len(els))
	for i, el := range els {
		names[i] = el.Key()
	}
	field, _ := exprEqualityProbe(pipeline, names)
	return field
}

// exprEqualityProbe recognises a sub-pipeline that starts with
// {$match: {$expr: {$eq: ["$path", "$$var"]}}} (either order), var one of
// the let variables names, and returns path and var's position ("" when it
// does not).
func exprEqualityProbe(pipeline bsoncore.Value, names []string) (string, int) {
	if arrayLen(pipeline.Data) == 0 {
		return "", -1
	}
	first, _ := arrayElem(pipeline.Data, 0)
	match, ok := soleField(first, "$match")
	if !ok {
		return "", -1
	}
	expr, ok := soleField(match, "$expr")
	if !ok {
		return "", -1
	}
	eq, ok := soleField(expr, "$eq")
	if !ok || eq.Type != bsoncore.TypeArray || arrayLen(eq.Data) != 2 {
		return "", -1
	}
	a, _ := arrayElem(eq.Data, 0)
	b, _ := arrayElem(eq.Data, 1)
	path, name := fieldRef(a), varRef(b)
	if path == "" || name == "" {
		path, name = fieldRef(b), varRef(a)
	}
	for i, n := range names {
		if path != "" && n == name {
			return path, i
		}
	}
	return "", -1
}

// soleField returns the value of a document's only field if it is named
// name.
func soleField(v bsoncore.Value, name string) (bsoncore.Value, bool) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return bsoncore.Value{}, false
	}
	els, err := bsoncore.Document(v.Data).Elements()
	if err != nil || len(els) != 1 || els[0].Key() != name {
		return bsoncore.Value{}, false
	}
	return els[0].Value(), true
}

// fieldRef is the path of a "$path" operand ("" for anything else).
func fieldRef(v bsoncore.Value) string {
	s, ok := v.StringValueOK()
	if !ok || len(s) < 2 || s[0] != '$' || s[1] == '$' {
		return ""
	}
	return s[1:]
}

// varRef is the name of a "$$name" operand ("" for anything else).
func varRef(v bsoncore.Value) string {
	s, ok := v.StringValueOK()
	if !ok || len(s) < 3 || s[:2] != "$$" || strings.ContainsRune(s, '.') {
		return ""
	}
	return s[2:]
}

func (l *lookupSpec) startsWithDocuments() bool {
	if !l.hasPipeline || arrayLen(l.pipeline.Data) == 0 {
		return false
	}
	first, _ := arrayElem(l.pipeline.Data, 0)
	return first.Type == bsoncore.TypeEmbeddedDocument && firstKey(first.Data) == "$documents"
}

// lookupFrom reads a from/coll argument: a name, or {db, coll} naming the
// pipeline's own database.
func lookupFrom(v bsoncore.Value, pc *pipeCtx) (string, error) {
	switch v.Type {
	case bsoncore.TypeString:
		if v.StringValue() == "" {
			return "", mongoerr.New(mongoerr.InvalidNamespace, "invalid $lookup namespace")
		}
		return v.StringValue(), nil
	case bsoncore.TypeEmbeddedDocument:
		db, _ := lookupField(v.Data, "db")
		coll, _ := lookupField(v.Data, "coll")
		if coll.Type != bsoncore.TypeString || (db.Type != 0 && db.Type != bsoncore.TypeString) {
			return "", mongoerr.New(mongoerr.FailedToParse, "the 'from' namespace must be a collection name or {db, coll}")
		}
		if db.Type == bsoncore.TypeString && db.StringValue() != pc.opts.DB {
			return "", mongoerr.New(mongoerr.NotImplemented, "a foreign collection in another database is not supported by DumboDB")
		}
		return coll.StringValue(), nil
	}
	return "", mongoerr.New(mongoerr.FailedToParse, "$lookup 'from' field must be a string or an object, but found %s", typeName(v.Type))
}

func (l *lookupSpec) compileLet(doc []byte, pc *pipeCtx) error {
	it := newIter(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return nil
		}
		name := string(k)
		if err := validateVarName(name); err != nil {
			return err
		}
		x, err := compileExpr(v, pc.env.scope())
		if err != nil {
			return err
		}
		l.letNames = append(l.letNames, name)
		l.letExprs = append(l.letExprs, x)
	}
}

func (l *lookupSpec) run(in Stream, pc *pipeCtx) Stream {
	foreign := &foreignColl{pc: pc, name: l.from, path: l.foreignField}
	filters := &inFilters{}
	// An index answers binary equality only: not under a collation.
	var ec EqualityCatalog
	if c, ok := pc.opts.Catalog.(EqualityCatalog); ok && l.localField != "" && l.from != "" && pc.env.coll() == nil {
		ec = c
	}
	return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		d, err := in.Next(ctx)
		if err != nil {
			return nil, err
		}
		// Each document costs a probe or a scan, and a sub-pipeline whose
		// checks count afresh on every run: look at every one.
		if err := ContextErr(ctx); err != nil {
			return nil, err
		}
		matches, err := l.matches(ctx, d, foreign, ec, filters, pc)
		if err != nil {
			return nil, err
		}
		as, err := l.collect(ctx, matches, pc)
		if err != nil {
			return nil, err
		}
		return setField(d, l.as, as), nil
	})
}

// matches streams the foreign documents local joins: those equal on
// localField/foreignField (through an index when one serves them), or
// all of them, then through the sub-pipeline.
func (l *lookupSpec) matches(ctx context.Context, local bsoncore.Document, foreign *foreignColl, ec EqualityCatalog, filters *inFilters, pc *pipeCtx) (Stream, error) {
	var s Stream
	var err error
	switch {
	case l.localField != "":
		s, err = l.equalMatches(ctx, local, foreign, ec, filters, pc)
	case l.probeField != "":
		s, err = l.probedMatches(ctx, local, foreign, pc)
	default:
		s, err = foreign.all(ctx)
	}
	if err != nil || !l.hasPipeline {
		return s, err
	}
	p, err := l.subPipeline(local, pc)
	if err != nil {
		return nil, err
	}
	return p.connect(s), nil
}

// equalMatches streams the foreign documents whose foreignField equals
// local's localField (an element of it, for an array).
func (l *lookupSpec) equalMatches(ctx context.Context, local bsoncore.Document, foreign *foreignColl, ec EqualityCatalog, filters *inFilters, pc *pipeCtx) (Stream, error) {
	lv := evalPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: local}, splitPath(l.localField))
	vals := localValues(lv)
	f, err := filters.in(l.foreignField, vals, pc.env)
	if err != nil {
		return nil, err
	}
	if ec != nil {
		cands, probed, err := ec.LookupEqual(ctx, l.from, l.foreignField, vals)
		if err != nil {
			return nil, err
		}
		if probed {
			return matching(&sliceStream{docs: cands}, f), nil
		}
	}
	cands, err := foreign.candidates(ctx, vals)
	if err != nil {
		return nil, err
	}
	return matching(cands, f), nil
}

// probedMatches streams the sub-pipeline's input for local: the
// candidates of its leading $expr equality from an index when one serves
// it, else the whole foreign collection.
func (l *lookupSpec) probedMatches(ctx context.Context, local bsoncore.Document, foreign *foreignColl, pc *pipeCtx) (Stream, error) {
	cands, probed, err := l.probeExprEquality(ctx, local, pc)
	if err != nil {
		return nil, err
	}
	if probed {
		return &sliceStream{docs: cands}, nil
	}
	return foreign.all(ctx)
}

// collect reads the matches into the 'as' array. Their total size is
// bounded per local document, as by mongod's
// internalLookupStageIntermediateDocumentMaxSizeBytes (100 MiB, the
// default memory limit), whatever allowDiskUse says.
func (l *lookupSpec) collect(ctx context.Context, matches Stream, pc *pipeCtx) (bsoncore.Value, error) {
	var vals []bsoncore.Value
	var size int64
	for {
		m, err := matches.Next(ctx)
		if errors.Is(err, io.EOF) {
			return buildArray(vals), nil
		}
		if err != nil {
			return bsoncore.Value{}, err
		}
		if size += int64(len(m)); size > pc.opts.MemoryLimit {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location4568, "Total size of documents in %s matching pipeline's $lookup stage exceeds %d bytes", l.from, pc.opts.MemoryLimit)
		}
		vals = append(vals, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: m})
	}
}

// probeExprEquality asks an index on probeField for the foreign documents
// whose field equals the probe variable's value for local: a superset of
// what the sub-pipeline's leading $expr $eq keeps (query equality also
// matches array elements, and null also matches missing), which that
// $match then filters exactly. probed is false when no index serves it.
func (l *lookupSpec) probeExprEquality(ctx context.Context, local bsoncore.Document, pc *pipeCtx) ([]bsoncore.Document, bool, error) {
	ec, ok := pc.opts.Catalog.(EqualityCatalog)
	if !ok || pc.env.coll() != nil {
		return nil, false, nil // an index answers binary equality only
	}
	v, err := l.letExprs[l.probeVar].eval(newEvalCtx(local, pc.env))
	if err != nil {
		return nil, false, err
	}
	switch v.Type {
	case 0:
		v = nullValue
	case bsoncore.TypeArray, bsoncore.TypeRegex, bsoncore.TypeUndefined:
		return nil, false, nil // query equality means something else for these
	}
	return ec.LookupEqual(ctx, l.from, l.probeField, []bsoncore.Value{v})
}

// subPipeline is the sub-pipeline for local: compiled once when there is
// no let, else with the let variables bound to their values for local.
func (l *lookupSpec) subPipeline(local bsoncore.Document, pc *pipeCtx) (*Pipeline, error) {
	if l.fixedPipeline != nil {
		return l.fixedPipeline, nil
	}
	c := newEvalCtx(local, pc.env)
	vals := make([]bsoncore.Value, len(l.letExprs))
	for i, x := range l.letExprs {
		v, err := x.eval(c)
		if err != nil {
			return nil, err
		}
		if v.Type == 0 {
			v = nullValue
		}
		vals[i] = v
	}
	sub := l.subCtx
	sub.env = pc.env.withVars(l.letNames, vals)
	return compileStages(l.pipeline, &sub)
}

// $unionWith appends another collection's documents, optionally through a
// pipeline, after the input.
func compileUnionWithStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	var coll string
	var sub *Pipeline
	switch spec.Type {
	case bsoncore.TypeString:
		coll = spec.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		it := newIter(spec.Data)
		for {
			k, v, ok := it.next()
			if !ok {
				break
			}
			switch string(k) {
			case "coll":
				name, err := lookupFrom(v, pc)
				if err != nil {
					return nil, err
				}
				coll = name
			case "pipeline":
				if v.Type != bsoncore.TypeArray {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$unionWith.pipeline' is the wrong type '%s', expected type 'array'", typeName(v.Type))
				}
				sc := pipeCtx{opts: pc.opts, env: pc.env, within: "$unionWith"}
				p, err := compileStages(v, &sc)
				if err != nil {
					return nil, err
				}
				sub = p
			default:
				return nil, mongoerr.New(mongoerr.Code(40415), "BSON field '$unionWith.%s' is an unknown field.", k)
			}
		}
	default:
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $unionWith stage specification must be an object or string, but found %s", typeName(spec.Type))
	}
	if coll == "" && (sub == nil || len(sub.specs) == 0 || firstKey(sub.specs[0]) != "$documents") {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field '$unionWith.coll' is missing but a required field")
	}
	return func(in Stream) Stream {
		var other Stream
		inDone := false
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			if !inDone {
				d, err := in.Next(ctx)
				if !errors.Is(err, io.EOF) {
					return d, err
				}
				inDone = true
			}
			if other == nil {
				// Streamed, not loaded: the sub-pipeline's blocking
				// stages account for what they hold.
				s, err := scanCollection(ctx, pc, coll)
				if err != nil {
					return nil, err
				}
				other = s
				if sub != nil {
					other = sub.connect(other)
				}
			}
			return other.Next(ctx)
		})
	}, nil
}

type graphLookupSpec struct {
	from, connectFrom, connectTo, as, depthField string
	startWith                                    Expr
	maxDepth                                     int64
	restrict                                     *Filter
	maxMemory                                    int64 // maxMemoryUsageBytes
}

func compileGraphLookupStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Code(40327), "the $graphLookup stage specification must be an object, but found %s", typeName(spec.Type))
	}
	g := &graphLookupSpec{maxDepth: -1}
	it := newIter(spec.Data)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		if err := g.setArg(string(k), v, pc); err != nil {
			return nil, err
		}
	}
	for name, v := range map[string]string{"from": g.from, "as": g.as, "connectToField": g.connectTo, "connectFromField": g.connectFrom} {
		if v == "" {
			return nil, mongoerr.New(mongoerr.Code(40105), "%s was not specified", name)
		}
	}
	if g.startWith == nil {
		return nil, mongoerr.New(mongoerr.Code(40105), "startWith was not specified")
	}
	if g.maxMemory == 0 {
		g.maxMemory = pc.opts.MemoryLimit
	}
	return func(in Stream) Stream {
		foreign := &foreignColl{pc: pc, name: g.from, path: g.connectTo}
		return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
			d, err := in.Next(ctx)
			if err != nil {
				return nil, err
			}
			return g.apply(ctx, d, foreign, pc.env)
		})
	}, nil
}

func (g *graphLookupSpec) setArg(key string, v bsoncore.Value, pc *pipeCtx) error {
	switch key {
	case "from":
		name, err := lookupFrom(v, pc)
		g.from = name
		return err
	case "startWith":
		x, err := compileExpr(v, pc.env.scope())
		g.startWith = x
		return err
	case "maxDepth":
		if !isNumber(v) || toFloat(v) < 0 || toFloat(v) != float64(int64(toFloat(v))) {
			return mongoerr.New(mongoerr.Code(40101), "maxDepth requires a nonnegative argument, found: %s", formatValue(v))
		}
		g.maxDepth = int64(toFloat(v))
		return nil
	case "maxMemoryUsageBytes":
		if !isNumber(v) || toFloat(v) < 1 || toFloat(v) != float64(int64(toFloat(v))) {
			return mongoerr.New(mongoerr.FailedToParse, "maxMemoryUsageBytes requires a positive integer argument, found: %s", formatValue(v))
		}
		g.maxMemory = int64(toFloat(v))
		return nil
	case "restrictSearchWithMatch":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.Code(40185), "restrictSearchWithMatch must be an object, found %s", typeName(v.Type))
		}
		f, err := CompileFilterEnv(v.Data, pc.env)
		g.restrict = f
		return err
	}
	if v.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.Code(40103), "expected string as argument for %s, found: %s", key, formatValue(v))
	}
	s := v.StringValue()
	switch key {
	case "connectFromField":
		g.connectFrom = s
	case "connectToField":
		g.connectTo = s
	case "as":
		g.as = s
	case "depthField":
		g.depthField = s
	default:
		return mongoerr.New(mongoerr.Code(40104), "Unknown argument to $graphLookup: %s", key)
	}
	return nil
}

// apply runs the breadth-first search for one document: each round
// matches connectToField against the values found in the previous round.
func (g *graphLookupSpec) apply(ctx context.Context, d bsoncore.Document, foreign *foreignColl, env *Env) (bsoncore.Document, error) {
	start, err := g.startWith.eval(newEvalCtx(d, env))
	if err != nil {
		return nil, err
	}
	s := &graphSearch{g: g, seen: map[string]bool{}, frontier: localValues(start)}
	for depth := int64(0); len(s.frontier) > 0 && (g.maxDepth < 0 || depth <= g.maxDepth); depth++ {
		// A round costs a probe per value or a scan: look at every one.
		if err := ContextErr(ctx); err != nil {
			return nil, err
		}
		matches, err := g.round(ctx, foreign, s.frontier, env)
		if err != nil {
			return nil, err
		}
		s.frontier, s.frontierSize = nil, 0
		for {
			m, err := matches.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			if err := s.visit(m, depth); err != nil {
				return nil, err
			}
		}
	}
	return setField(d, g.as, buildArray(s.found)), nil
}

// round streams the foreign documents whose connectToField equals one of
// the frontier's values.
func (g *graphLookupSpec) round(ctx context.Context, foreign *foreignColl, frontier []bsoncore.Value, env *Env) (Stream, error) {
	f, err := (*inFilters)(nil).in(g.connectTo, frontier, env)
	if err != nil {
		return nil, err
	}
	cands, err := foreign.candidates(ctx, frontier)
	if err != nil {
		return nil, err
	}
	return matching(cands, f), nil
}

// graphSearch is the state of one document's search. What it holds, the
// documents found and the next round's values, is bounded by
// maxMemoryUsageBytes as mongod bounds it.
type graphSearch struct {
	g                     *graphLookupSpec
	seen                  map[string]bool // _ids found
	found                 []bsoncore.Value
	frontier              []bsoncore.Value // the next round's values
	visited, frontierSize int64            // bytes held
}

// visit adds a document matched at depth, unless already found or
// excluded by restrictSearchWithMatch, and its connectFromField values to
// the next round.
func (s *graphSearch) visit(m bsoncore.Document, depth int64) error {
	g := s.g
	id, _ := lookupField(m, "_id")
	key := string(id.Data) + strconv.Itoa(int(id.Type))
	if s.seen[key] || (g.restrict != nil && !g.restrict.Match(m)) {
		return nil
	}
	s.seen[key] = true
	out := m
	if g.depthField != "" {
		out = setField(m, g.depthField, mkInt64(depth))
	}
	s.found = append(s.found, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out})
	s.visited += int64(len(key) + len(out))
	next := evalPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: m}, splitPath(g.connectFrom))
	if next.Type != 0 {
		for _, v := range localValues(next) {
			s.frontier = append(s.frontier, v)
			s.frontierSize += int64(len(v.Data))
		}
	}
	if s.visited+s.frontierSize > g.maxMemory {
		return mongoerr.New(mongoerr.Location40099, "$graphLookup reached maximum memory consumption")
	}
	return nil
}
