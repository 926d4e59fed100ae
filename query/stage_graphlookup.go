package query

import (
	"context"
	"errors"
	"io"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

type graphLookupSpec struct {
	from, connectFrom, connectTo, as, depthField string
	startWith                                    Expr
	maxDepth                                     int64
	restrict                                     *Filter
	maxMemory                                    int64 // maxMemoryUsageBytes
}

func compileGraphLookupStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40327, "the $graphLookup stage specification must be an object, but found %s", value.TypeName(spec.Type))
	}
	g := &graphLookupSpec{maxDepth: -1}
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if err := g.setArg(string(k), v, pc); err != nil {
			return nil, err
		}
	}
	for name, v := range map[string]string{"from": g.from, "as": g.as, "connectToField": g.connectTo, "connectFromField": g.connectFrom} {
		if v == "" {
			return nil, mongoerr.New(mongoerr.Location40105, "%s was not specified", name)
		}
	}
	if g.startWith == nil {
		return nil, mongoerr.New(mongoerr.Location40105, "startWith was not specified")
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
		if !value.IsNumber(v) || value.ToFloat(v) < 0 || value.ToFloat(v) != float64(int64(value.ToFloat(v))) {
			return mongoerr.New(mongoerr.Location40101, "maxDepth requires a nonnegative argument, found: %s", value.Format(v))
		}
		g.maxDepth = int64(value.ToFloat(v))
		return nil
	case "maxMemoryUsageBytes":
		if !value.IsNumber(v) || value.ToFloat(v) < 1 || value.ToFloat(v) != float64(int64(value.ToFloat(v))) {
			return mongoerr.New(mongoerr.FailedToParse, "maxMemoryUsageBytes requires a positive integer argument, found: %s", value.Format(v))
		}
		g.maxMemory = int64(value.ToFloat(v))
		return nil
	case "restrictSearchWithMatch":
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return mongoerr.New(mongoerr.Location40185, "restrictSearchWithMatch must be an object, found %s", value.TypeName(v.Type))
		}
		f, err := CompileFilterEnv(v.Data, pc.env)
		g.restrict = f
		return err
	}
	if v.Type != bsoncore.TypeString {
		return mongoerr.New(mongoerr.Location40103, "expected string as argument for %s, found: %s", key, value.Format(v))
	}
	s := v.StringValue()
	if err := value.CheckNoNul(s); err != nil {
		return err
	}
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
		return mongoerr.New(mongoerr.Location40104, "Unknown argument to $graphLookup: %s", key)
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
		if err := interrupt.Err(ctx); err != nil {
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
	return setField(d, g.as, value.BuildArray(s.found)), nil
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
	id, _ := value.LookupField(m, "_id")
	key := string(id.Data) + strconv.Itoa(int(id.Type))
	if s.seen[key] || (g.restrict != nil && !g.restrict.Match(m)) {
		return nil
	}
	s.seen[key] = true
	out := m
	if g.depthField != "" {
		out = setField(m, g.depthField, value.Int64(depth))
	}
	s.found = append(s.found, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: out})
	s.visited += int64(len(key) + len(out))
	next := evalPath(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: m}, value.SplitPath(g.connectFrom))
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
