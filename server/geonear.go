package server

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// A pipeline that starts with $geoNear reads the collection through the
// planner as a find of the stage's query and a near predicate on its key
// (plan: a geo index, nearest first); the stage then adds the distance.
// Without a key, the field of the collection's one geo index is the key,
// written into the stage before the pipeline compiles, as mongod picks it.

// withGeoNearKey names the key of a leading $geoNear that has none.
func withGeoNearKey(snap *storage.Snapshot, a *aggregateArgs) error {
	stages := pipelineStages(a.pipeline)
	if len(stages) == 0 || value.FirstKey(stages[0]) != "$geoNear" {
		return nil
	}
	spec, ok := stages[0].Lookup("$geoNear").DocumentOK()
	if !ok {
		return nil // the stage reports it
	}
	if _, has := spec.Lookup("key").StringValueOK(); has {
		return nil
	}
	key, err := geoNearKey(snap.Indexes(a.coll), a.coll)
	if err != nil {
		return err
	}
	els, _ := spec.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	b.AppendString("key", key)
	stages[0] = bsoncore.NewDocumentBuilder().AppendDocument("$geoNear", b.Build()).Build()
	a.pipeline = stagesArray(stages)
	return nil
}

// geoNearKey is the field of the one 2d index, else of the one 2dsphere
// index, as mongod chooses.
func geoNearKey(indexes []storage.IndexInfo, coll string) (string, error) {
	byKind := map[string][]string{}
	for _, ix := range indexes {
		if f, ok := ix.Spec.GeoField(); ok {
			byKind[f.Geo] = append(byKind[f.Geo], f.Path)
		}
	}
	for _, kind := range []string{index.Geo2D, index.Geo2DSphere} {
		switch paths := byKind[kind]; len(paths) {
		case 0:
			continue
		case 1:
			return paths[0], nil
		default:
			return "", mongoerr.New(mongoerr.IndexNotFound, "There is more than one %s index on %s; unsure which to use for $geoNear", kind, coll)
		}
	}
	return "", mongoerr.New(mongoerr.NoQueryExecutionPlans, "$geoNear requires a 2d or 2dsphere index, but none were found")
}

// planLeadingGeoNear plans the read of a leading $geoNear; nil when the
// pipeline has none (or a stage the pipeline's compile refused).
func planLeadingGeoNear(snap *storage.Snapshot, a *aggregateArgs, env *query.Env) (*leadingMatch, error) {
	stages := pipelineStages(a.pipeline)
	if len(stages) == 0 || value.FirstKey(stages[0]) != "$geoNear" {
		return nil, nil
	}
	g, err := query.ParseGeoNear(stages[0].Lookup("$geoNear"))
	if err != nil {
		return nil, err
	}
	f, err := g.Filter(env)
	if err != nil {
		return nil, err
	}
	return &leadingMatch{Filter: f, FilterDoc: value.OrEmpty(geoNearQuery(stages[0])), Consumer: plan.ForPipeline}, nil
}

// geoNearQuery is a $geoNear's query, which explain shows as its filter.
func geoNearQuery(stage bsoncore.Document) bsoncore.Document {
	d, _ := stage.Lookup("$geoNear", "query").DocumentOK()
	return d
}
