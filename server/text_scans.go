package server

import (
	"context"
	"errors"
	"io"

	"dumbodb/index"
	"dumbodb/query"
	"dumbodb/query/mongoerr"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// textPlan serves a $text query from the collection's text index, which
// it requires (mongod's error 27 otherwise), and binds the filter's $text
// to the index's fields, weights and language.
func textPlan(indexes []storage.IndexInfo, f *query.Filter) (*queryPlan, error) {
	for i := range indexes {
		ix := &indexes[i]
		if ix.Spec.Text != nil {
			f.BindText(*ix.Spec.Text)
			return &queryPlan{ix: ix, text: append([]string{}, f.TextTerms()...)}, nil
		}
	}
	return nil, mongoerr.New(mongoerr.Code(27), "text index required for $text query")
}

// textOrPlan serves a $text that is one clause of a top-level $or. As on
// mongod, each other clause must be one an index can answer (error 291
// otherwise). mongod then unions the text and index scans; DumboDB scans
// the collection with the whole filter, which returns the same documents.
func textOrPlan(rd storage.Reader, coll string, indexes []storage.IndexInfo, f *query.Filter, others []bsoncore.Document) (*queryPlan, error) {
	if _, err := textPlan(indexes, f); err != nil {
		return nil, err
	}
	env, err := query.NewEnv(f.Collation(), nil)
	if err != nil {
		return nil, err
	}
	for _, clause := range others {
		if !clauseIndexed(rd, coll, clause, env) {
			return nil, mongoerr.New(mongoerr.NoQueryExecutionPlans, "error processing query: planner returned error :: caused by :: "+
				"Failed to produce a solution for TEXT under OR - other non-TEXT clauses under OR have to be indexed as well.")
		}
	}
	return &queryPlan{}, nil
}

// clauseIndexed reports whether the planner answers clause, alone, from an
// index or an _id look-up.
func clauseIndexed(rd storage.Reader, coll string, clause bsoncore.Document, env *query.Env) bool {
	cf, err := query.CompileFilterEnv(clause, env)
	if err != nil {
		return false
	}
	p, err := planQuery(rd, coll, planInput{filter: cf})
	return err == nil && (p.idHack || p.ix != nil)
}

// textSource looks every term up in the text index, then fetches each
// document found once (in _id key order) and matches it against the whole
// filter: negations, phrases and the other predicates.
func textSource(ctx context.Context, rd storage.Reader, coll string, f *query.Filter, p *queryPlan, st *execStats) (docSource, error) {
	seen := map[string]bool{}
	ids := []scanned{}
	for _, term := range p.text {
		prefix := index.TextTermPrefix(term)
		iv := index.Interval{Start: prefix, Stop: append(append([]byte(nil), prefix...), index.AfterPrefix)}
		it, err := rd.IndexScan(ctx, coll, p.ix.Spec.Name, iv)
		if err != nil {
			return nil, err
		}
		for {
			_, id, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			st.keysExamined++
			if !seen[string(id)] {
				seen[string(id)] = true
				ids = append(ids, scanned{id: append([]byte(nil), id...)})
			}
		}
	}
	return &indexSource{rd: rd, coll: coll, f: f, p: p, st: st, seen: map[string]bool{}, ids: ids}, nil
}

// textStage is the explain of a text plan: TEXT_MATCH over FETCH over
// the term look-ups (TEXT_OR of IXSCANs).
func textStage(p *queryPlan, filter bsoncore.Document) bsoncore.Document {
	terms := bsoncore.NewArrayBuilder()
	for _, t := range p.text {
		terms.AppendString(t)
	}
	ixscan := bsoncore.NewDocumentBuilder().AppendString("stage", "IXSCAN").
		AppendDocument("keyPattern", p.ix.Spec.Key).AppendString("indexName", p.ix.Spec.Name).
		AppendArray("terms", terms.Build()).Build()
	fetch := bsoncore.NewDocumentBuilder().AppendString("stage", "FETCH").
		AppendDocument("inputStage", wrapStage("TEXT_OR", ixscan, bsoncore.NewDocumentBuilder())).Build()
	b := bsoncore.NewDocumentBuilder().AppendString("stage", "TEXT_MATCH").AppendString("indexName", p.ix.Spec.Name)
	if nonEmpty(filter) {
		b.AppendDocument("filter", filter)
	}
	return b.AppendDocument("inputStage", fetch).Build()
}
