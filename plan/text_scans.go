package plan

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// textPlan serves a $text query from the collection's text index, which
// it requires (mongod's error 27 otherwise), and binds the filter's $text
// to the index's fields, weights and language. A compound text index
// needs an equality on each of its prefix fields, as mongod, and a
// partial one a filter that implies its partialFilterExpression, else
// documents outside it would be missed.
func textPlan(indexes []storage.IndexInfo, f *query.Filter) (*Plan, error) {
	for i := range indexes {
		ix := &indexes[i]
		if ix.Spec.Text == nil || ix.Spec.Hidden {
			continue // a hidden index answers no query, as on mongod
		}
		prefix, shown, ok := textPrefixValues(ix.Spec.TextPrefix, f)
		if !ok || (ix.Spec.Partial != nil && !f.Implies(ix.Spec.Partial, ix.Spec.Collation())) {
			return nil, errTextUnplannable()
		}
		f.BindText(*ix.Spec.Text)
		return &Plan{ix: ix, text: append([]string{}, f.TextTerms()...), textPrefix: prefix,
			textSuffix: textSuffixIntervals(ix.Spec.TextSuffix, f), textIndexPrefix: shown, parsedText: f.ParsedTextQuery()}, nil
	}
	return nil, mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
}

// errTextUnplannable is mongod's error for a $text no text index can
// answer: a compound one without equalities on its prefix, or a hint of
// another index.
func errTextUnplannable() error {
	return mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: "+
		"failed to use text index to satisfy $text query (if text index is compound, are equality predicates given for all prefix fields?)")
}

// checkTextHint accepts a hint of the text index (by name or key
// pattern); a hint of another index leaves the $text without one, as on
// mongod, and an unknown one is the usual error.
func checkTextHint(indexes []storage.IndexInfo, hint bsoncore.Value) error {
	for i := range indexes {
		if s := indexes[i].Spec; s.Text != nil && !s.Hidden && hintNames(s, hint) {
			return nil
		}
	}
	if _, _, err := resolveHint(indexes, hint); err != nil {
		return err
	}
	return errTextUnplannable()
}

// hintNames reports a hint naming text index s: its name, or a key pattern
// that parses to its key.
func hintNames(s *index.Spec, hint bsoncore.Value) bool {
	if name, ok := hint.StringValueOK(); ok {
		return name == s.Name
	}
	d, ok := hint.DocumentOK()
	if !ok {
		return false
	}
	probe, err := index.ParseSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", d).Build(), nil)
	return err == nil && probe.Text != nil && probe.SameKey(s)
}

// textPrefixValues encodes the values the filter's top-level equalities
// give a compound text index's prefix fields, and shows them as explain's
// indexPrefix (false: one has none, or an array, which no entry's prefix
// can be).
func textPrefixValues(fields []index.Field, f *query.Filter) ([]byte, bsoncore.Document, bool) {
	shown := bsoncore.NewDocumentBuilder()
	vals := make([]bsoncore.Value, len(fields))
	for i, fd := range fields {
		found := false
		for _, eq := range f.EqualityFields() {
			if eq.Path == fd.Path && eq.Value.Type != bsoncore.TypeArray {
				vals[i], found = eq.Value, true
				shown.AppendValue(fd.Path, eq.Value)
				break
			}
		}
		if !found {
			return nil, nil, false
		}
	}
	return index.TextPrefixKey(fields, vals), shown.Build(), true
}

// textSuffixIntervals bounds a compound text index's suffix fields by the
// filter's predicates on them, as an index plan bounds its fields (nil:
// they bound nothing). Text indexes have the simple collation, so under
// another only the predicates no collation affects count.
func textSuffixIntervals(fields []index.Field, f *query.Filter) []index.Interval {
	preds := collationPreds(f.IndexablePredicates(), nil, f.Collation())
	var bounds [][]index.FieldInterval
	bounded := false
	for _, fd := range fields {
		ivs, _ := fieldIntervals(fd.Path, preds, false)
		if fd.Desc {
			for i := range ivs {
				ivs[i] = ivs[i].Descending()
			}
		}
		full := len(ivs) == 1 && ivs[0].LoText == "MinKey" && ivs[0].HiText == "MaxKey"
		bounded = bounded || !full
		bounds = append(bounds, ivs)
	}
	if !bounded {
		return nil
	}
	return index.EntryIntervals(bounds)
}

// inSuffixIntervals reports whether a text entry's suffix fields fall in
// the plan's suffix ranges (true when it has none).
func inSuffixIntervals(p *Plan, termPrefix, entry, id []byte) bool {
	if p.textSuffix == nil {
		return true
	}
	suffix := index.TextEntrySuffix(entry, termPrefix, id)
	for _, iv := range p.textSuffix {
		if bytes.Compare(suffix, iv.Start) >= 0 && bytes.Compare(suffix, iv.Stop) < 0 {
			return true
		}
	}
	return false
}

// orClause is a clause of a top-level $or beside a $text, with its plan.
type orClause struct {
	raw    bsoncore.Document
	filter *query.Filter
	plan   *Plan
}

// textOrPlan serves a $text that is one clause of a top-level $or, as
// mongod does: the text index's candidates and those of an index plan for
// each other clause, fetched once each and matched against the whole
// filter. Every other clause must have such a plan (error 291 otherwise).
func textOrPlan(rd storage.Reader, coll string, indexes []storage.IndexInfo, f *query.Filter, others []bsoncore.Document) (*Plan, error) {
	p, err := textPlan(indexes, f)
	if err != nil {
		return nil, err
	}
	env, err := query.NewEnv(f.Collation(), nil)
	if err != nil {
		return nil, err
	}
	env.JS, env.JSScope = f.Scripts()
	for _, raw := range others {
		cl, ok := indexedClause(rd, coll, raw, env)
		if !ok {
			return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: "+
				"Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
		}
		p.orClauses = append(p.orClauses, cl)
	}
	return p, nil
}

// indexedClause plans clause alone; ok is false unless an index or an _id
// look-up answers it.
func indexedClause(rd storage.Reader, coll string, raw bsoncore.Document, env *query.Env) (orClause, bool) {
	cf, err := query.CompileFilterEnv(raw, env)
	if err != nil {
		return orClause{}, false
	}
	p, err := Query(rd, coll, Input{Filter: cf})
	if err != nil || !(p.idHack || p.ix != nil) {
		return orClause{}, false
	}
	return orClause{raw: raw, filter: cf, plan: p}, true
}

// textSource looks every term up in the text index, then fetches each
// document found once (in _id key order) and matches it against the whole
// filter: negations, phrases and the other predicates.
func textSource(ctx context.Context, rd storage.Reader, coll string, f *query.Filter, p *Plan, st *execStats) (Source, error) {
	seen := map[string]bool{}
	ids := []scanned{}
	for _, term := range p.text {
		prefix := index.TextTermPrefix(p.textPrefix, term)
		iv := index.Interval{Start: prefix, Stop: append(append([]byte(nil), prefix...), index.AfterPrefix)}
		err := eachEntry(ctx, rd, coll, p.ix.Spec.Name, iv, func(entry, id []byte) {
			st.keysExamined++
			if !seen[string(id)] && inSuffixIntervals(p, prefix, entry, id) {
				seen[string(id)] = true
				ids = append(ids, scanned{id: append([]byte(nil), id...)})
			}
		})
		if err != nil {
			return nil, err
		}
	}
	for _, cl := range p.orClauses {
		if err := clauseIDs(ctx, rd, coll, cl, st, seen, &ids); err != nil {
			return nil, err
		}
	}
	return &indexSource{rd: rd, coll: coll, f: f, p: p, st: st, seen: map[string]bool{}, ids: ids}, nil
}

// clauseIDs adds the _id keys of the documents an $or clause selects
// through its plan.
func clauseIDs(ctx context.Context, rd storage.Reader, coll string, cl orClause, st *execStats, seen map[string]bool, ids *[]scanned) error {
	src, err := planSource(ctx, rd, coll, cl.filter, cl.plan, st)
	if err != nil {
		return err
	}
	for {
		doc, err := src.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		id := index.EncodeID(nil, doc.Lookup("_id"))
		if !seen[string(id)] {
			seen[string(id)] = true
			*ids = append(*ids, scanned{id: id})
		}
	}
}

// textOrStage is the explain of a $text under $or: an OR of the text
// plan and each clause's plan, whose documents are fetched once and
// matched against the whole filter.
func textOrStage(p *Plan, filter bsoncore.Document) bsoncore.Document {
	inputs := bsoncore.NewArrayBuilder().AppendDocument(textStage(p, nil))
	for _, cl := range p.orClauses {
		inputs.AppendDocument(cl.plan.leafStage(cl.raw))
	}
	or := bsoncore.NewDocumentBuilder().AppendString("stage", "OR").AppendArray("inputStages", inputs.Build()).Build()
	b := bsoncore.NewDocumentBuilder().AppendString("stage", "FETCH")
	if nonEmpty(filter) {
		b.AppendDocument("filter", filter)
	}
	return b.AppendDocument("inputStage", or).Build()
}

// textStage is the explain of a text plan: TEXT_MATCH over FETCH over
// the term look-ups (TEXT_OR of IXSCANs).
func textStage(p *Plan, filter bsoncore.Document) bsoncore.Document {
	terms := bsoncore.NewArrayBuilder()
	for _, t := range p.text {
		terms.AppendString(t)
	}
	ixscan := bsoncore.NewDocumentBuilder().AppendString("stage", "IXSCAN").
		AppendDocument("keyPattern", p.ix.Spec.Key).AppendString("indexName", p.ix.Spec.Name).
		AppendArray("terms", terms.Build()).Build()
	fetch := bsoncore.NewDocumentBuilder().AppendString("stage", "FETCH").
		AppendDocument("inputStage", wrapStage("TEXT_OR", ixscan, bsoncore.NewDocumentBuilder())).Build()
	b := bsoncore.NewDocumentBuilder().AppendString("stage", "TEXT_MATCH").
		AppendDocument("indexPrefix", value.OrEmpty(p.textIndexPrefix)).AppendString("indexName", p.ix.Spec.Name).
		AppendDocument("parsedTextQuery", value.OrEmpty(p.parsedText)).AppendInt32("textIndexVersion", 3)
	if nonEmpty(filter) {
		b.AppendDocument("filter", filter)
	}
	return b.AppendDocument("inputStage", fetch).Build()
}
