package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// $match: the documents of the input a filter matches.

// matching streams the documents of in that f matches.
func matching(in Stream, f *Filter) Stream {
	return mapStream(in, func(d bsoncore.Document) (bsoncore.Document, error) {
		if f.Match(d) {
			return d, nil
		}
		return nil, f.Err()
	})
}

func compileMatchStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location15959, "the match filter must be an expression in an object")
	}
	// $near needs the order a plan gives: a stage's filter refuses it,
	// as mongod's does ($geoNear is the stage for it).
	f := &Filter{env: pc.env, noNear: true, js: usesJS(spec.Data), raw: spec.Data}
	root, err := f.parseDoc(spec.Data, true)
	if err != nil {
		return nil, err
	}
	f.root = root
	if f.HasText() {
		if !pc.first {
			return nil, mongoerr.New(mongoerr.Location17313, "$match with $text is only allowed as the first pipeline stage")
		}
		pc.text = f
	}
	return func(in Stream) Stream { return matching(in, f) }, nil
}
