package plan

import (
	"context"
	"math"

	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// stage is one step a read stacks on its plan's source: how it opens,
// and how explain shows it (an empty name: explain shows nothing).
type stage struct {
	name   string
	detail func(b *bsoncore.DocumentBuilder) // explain's fields besides stage and inputStage
	open   func(ctx context.Context, rd storage.Reader, coll string, src Source) (Source, error)
}

// stages are what r stacks on plan p, innermost first.
func (r *Read) stages(p *Plan) ([]stage, error) {
	var out []stage
	if kr := r.KeyRange; kr != nil {
		out = append(out, stage{open: func(_ context.Context, _ storage.Reader, _ string, src Source) (Source, error) {
			return &keyRangeSource{src: src, kr: kr}, nil
		}})
	}
	if r.Sort != nil && r.Sort.HasKeys() && !p.sorted {
		out = append(out, stage{name: "SORT",
			detail: func(b *bsoncore.DocumentBuilder) { b.AppendDocument("sortPattern", r.SortDoc) },
			open: func(ctx context.Context, rd storage.Reader, coll string, src Source) (Source, error) {
				return sortScan(ctx, src, r.Sort, rd, coll, r.sortKeeps())
			}})
	}
	if r.natural() < 0 {
		out = append(out, stage{open: func(ctx context.Context, _ storage.Reader, _ string, src Source) (Source, error) {
			return reverse(ctx, src)
		}})
	}
	blockingSort := r.Sort != nil && r.Sort.HasKeys() && !p.sorted
	if r.Skip > 0 {
		out = append(out, skipLimitStage("SKIP", "skipAmount", r.Skip, 0, blockingSort))
	}
	if r.Limit > 0 {
		out = append(out, skipLimitStage("LIMIT", "limitAmount", 0, r.Limit, blockingSort))
	}
	shape, err := r.shapeStage(p)
	if err != nil || shape == nil {
		return out, err
	}
	return append(out, *shape), nil
}

// sortKeeps is how many of its sorted documents a blocking sort must keep
// (0: all): a limit's worth past the skip.
func (r *Read) sortKeeps() int {
	if r.Limit <= 0 || r.Limit > math.MaxInt32 || r.Skip > math.MaxInt32 {
		return 0
	}
	return int(r.Skip + r.Limit)
}

// skipLimitStage skips or limits; bySort: over a blocking sort, which
// enforces the limit on mongod (known_end.go).
func skipLimitStage(name, field string, skip, limit int64, bySort bool) stage {
	return stage{name: name,
		detail: func(b *bsoncore.DocumentBuilder) { b.AppendValue(field, value.Count(max(skip, limit))) },
		open: func(_ context.Context, _ storage.Reader, _ string, src Source) (Source, error) {
			return &skipLimitSource{src: src, skip: skip, limit: limit, bySort: bySort}, nil
		}}
}

// shapeStage is what shapes r's documents: returnKey and showRecordId,
// or the projection (nil: nothing).
func (r *Read) shapeStage(p *Plan) (*stage, error) {
	switch {
	case r.ReturnKey || r.ShowRecordID:
		var keys []string
		if r.ReturnKey {
			var err error
			if keys, err = p.keyFields(r.sortsByIDAlone()); err != nil {
				return nil, err
			}
		}
		return &stage{open: func(_ context.Context, _ storage.Reader, _ string, src Source) (Source, error) {
			return keysAndRecords(src, keys, r.ReturnKey, r.ShowRecordID, r.Projection, r.RecordIDs), nil
		}}, nil
	case r.Projection != nil:
		s := &stage{name: "PROJECTION_DEFAULT", open: func(_ context.Context, _ storage.Reader, _ string, src Source) (Source, error) {
			return project(src, r.Projection), nil
		}}
		if p.covered {
			s.name = "PROJECTION_COVERED"
			s.detail = func(b *bsoncore.DocumentBuilder) { b.AppendDocument("transformBy", r.ProjectionDoc) }
		}
		return s, nil
	}
	return nil, nil
}

// explainTree is the plan tree explain shows for r run over p: the
// plan's leaf stages (the index alone when covered), then each stage r
// stacks on it that has a name.
func (r *Read) explainTree(p *Plan) (bsoncore.Document, error) {
	stack, err := r.prepare(p)
	if err != nil {
		return nil, err
	}
	tree := p.leafStage(r.FilterDoc)
	switch {
	case r.natural() < 0 && p.ix == nil && !p.idHack && p.idRange == nil:
		tree = collscanStage(r.FilterDoc, "backward") // the documents are reversed (reverse)
	case p.covered:
		tree = ixscanStage(p)
		if nonEmpty(r.FilterDoc) {
			tree = appendField(tree, "filter", r.FilterDoc)
		}
	}
	for _, s := range stack {
		if s.name == "" {
			continue
		}
		b := bsoncore.NewDocumentBuilder()
		if s.detail != nil {
			s.detail(b)
		}
		tree = wrapStage(s.name, tree, b)
	}
	return tree, nil
}

// Tree plans r over coll in rd and returns the plan tree explain shows
// for it, without running it.
func Tree(rd storage.Reader, coll string, r *Read) (bsoncore.Document, error) {
	p, err := Query(rd, coll, r.input())
	if err != nil {
		return nil, err
	}
	return r.explainTree(p)
}
