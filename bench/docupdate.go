package bench

import (
	"context"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// docUpdate is one way of changing a document in place.
type docUpdate struct {
	name string
	// prepare (untimed) and call build the update for field path p.
	prepare, call func(p string, n int64) bson.D
}

var docUpdates = []docUpdate{
	{"ArrayExtend", nil, func(p string, n int64) bson.D { return d("$push", d(p+"arr", n)) }},
	{"ArrayShorten",
		func(p string, n int64) bson.D { return d("$push", d(p+"arr", n)) },
		func(p string, _ int64) bson.D { return d("$pop", d(p+"arr", 1)) }},
	{"FieldInsert",
		func(p string, _ int64) bson.D { return d("$unset", d(p+"x", "")) },
		func(p string, n int64) bson.D { return d("$set", d(p+"x", n)) }},
	{"FieldRemove",
		func(p string, n int64) bson.D { return d("$set", d(p+"x", n)) },
		func(p string, _ int64) bson.D { return d("$unset", d(p+"x", "")) }},
}

func docUpdateBenchmarks() []Benchmark {
	var bs []Benchmark
	for _, u := range docUpdates {
		for _, depth := range []int{1, 3, 5} {
			for _, s := range []docSize{size10KB, size100KB, size1MB} {
				bs = append(bs, Benchmark{Name: fmt.Sprintf("DocUpdate/%s/Depth%d/%s", u.name, depth, s.name),
					Group: GroupDocUpdates, Unit: "op", Setup: updateInside(u, depth, s)})
			}
		}
	}
	return bs
}

// nested builds a document of s bytes whose array arr and field f sit at
// the given depth (1 is top level), under a chain of fields named a.
func nested(depth int, s docSize) bson.D {
	arr := bson.A{}
	for i := range 100 {
		arr = append(arr, int64(i))
	}
	inner := bson.D{{Key: "arr", Value: arr}, {Key: "f", Value: int64(1)}}
	for range depth - 1 {
		inner = d("a", inner)
	}
	doc := append(bson.D{{Key: "_id", Value: int64(1)}, {Key: "pad", Value: ""}}, inner...)
	raw, err := bson.Marshal(doc)
	if err != nil {
		panic(err) // a fixed, valid document
	}
	doc[1].Value = strings.Repeat("x", max(s.bytes-len(raw), 0))
	return doc
}

func updateInside(u docUpdate, depth int, s docSize) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if _, err := e.Coll.InsertOne(ctx, nested(depth, s)); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
		path := strings.Repeat("a.", depth-1)
		id := d("_id", int64(1))
		w := &Workload{Call: func(ctx context.Context, n int64) error {
			return expectMatched(e.Coll.UpdateOne(ctx, id, u.call(path, n)))
		}}
		if u.prepare != nil {
			w.Prepare = func(ctx context.Context, n int64) error {
				return expectMatched(e.Coll.UpdateOne(ctx, id, u.prepare(path, n)))
			}
		}
		return w, nil
	}
}
