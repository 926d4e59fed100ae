package query

import (
	"context"
	"errors"
	"io"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

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
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $lookup stage specification must be an object, but found %s", value.TypeName(spec.Type))
	}
	l := &lookupSpec{}
	var hasLocal, hasForeign bool
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
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
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'let' must be an object, is type %s", value.TypeName(v.Type))
			}
			if err := l.compileLet(v.Data, pc); err != nil {
				return nil, err
			}
			continue
		case "pipeline":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument 'pipeline' must be an array, is type %s", value.TypeName(v.Type))
			}
			l.pipeline, l.hasPipeline = v, true
			continue
		}
		if v.Type != bsoncore.TypeString {
			return nil, mongoerr.New(mongoerr.FailedToParse, "$lookup argument '%s: %s' must be a string, is type %s", key, value.Format(v), value.TypeName(v.Type))
		}
		var err error
		switch s := v.StringValue(); key {
		case "localField":
			l.localField, hasLocal, err = s, true, value.CheckFieldPath(s)
		case "foreignField":
			l.foreignField, hasForeign, err = s, true, value.CheckFieldPath(s)
		case "as":
			l.as, err = s, value.CheckNoNul(s)
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "unknown argument to $lookup: %s", key)
		}
		if err != nil {
			return nil, err
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
	if value.ArrayLen(pipeline.Data) == 0 {
		return "", -1
	}
	first, _ := value.ArrayElem(pipeline.Data, 0)
	match, ok := soleField(first, "$match")
	if !ok {
		return "", -1
	}
	expr, ok := soleField(match, "$expr")
	if !ok {
		return "", -1
	}
	eq, ok := soleField(expr, "$eq")
	if !ok || eq.Type != bsoncore.TypeArray || value.ArrayLen(eq.Data) != 2 {
		return "", -1
	}
	a, _ := value.ArrayElem(eq.Data, 0)
	b, _ := value.ArrayElem(eq.Data, 1)
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
	if !l.hasPipeline || value.ArrayLen(l.pipeline.Data) == 0 {
		return false
	}
	first, _ := value.ArrayElem(l.pipeline.Data, 0)
	return first.Type == bsoncore.TypeEmbeddedDocument && value.FirstKey(first.Data) == "$documents"
}

func (l *lookupSpec) compileLet(doc []byte, pc *pipeCtx) error {
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
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
		if err := interrupt.Err(ctx); err != nil {
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
	lv := evalPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: local}, value.SplitPath(l.localField))
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
			return value.BuildArray(vals), nil
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
		v = value.Null
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
			v = value.Null
		}
		vals[i] = v
	}
	sub := l.subCtx
	sub.env = pc.env.withVars(l.letNames, vals)
	return compileStages(l.pipeline, &sub)
}
