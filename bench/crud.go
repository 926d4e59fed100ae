package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func crudBenchmarks() []Benchmark {
	bs := []Benchmark{
		{Name: "FindOne/IntId", Group: GroupReads, Unit: "op", Setup: findByID(func(i int) any { return int64(i) })},
		{Name: "FindOne/StringId", Group: GroupReads, Unit: "op", Setup: findByID(func(i int) any { return fmt.Sprintf("user-%08d", i) })},
		{Name: "FindOne/ObjectId", Group: GroupReads, Unit: "op", Setup: findByID(objectID)},
		{Name: "FindOne/DocId", Group: GroupReads, Unit: "op", Setup: findByID(func(i int) any {
			return bson.D{{Key: "region", Value: "eu"}, {Key: "seq", Value: int64(i)}}
		})},
	}
	for _, s := range []docSize{size1KB, size10KB, size100KB, size1MB} {
		bs = append(bs, Benchmark{Name: "FindOne/" + s.name, Group: GroupReads, Unit: "op", Setup: findSized(s)})
	}
	for _, s := range []docSize{size100B, size1KB, size10KB, size100KB, size1MB} {
		bs = append(bs, Benchmark{Name: "InsertOne/" + s.name, Group: GroupInserts, Unit: "op", Setup: insertSized(s)})
	}
	for _, s := range []docSize{size100B, size1KB, size10KB, size100KB, size1MB} {
		bs = append(bs, Benchmark{Name: "UpdateOne/Set/" + s.name, Group: GroupUpdates, Unit: "op", Setup: updateSized(s)})
	}
	return bs
}

// objectID makes the i-th of a deterministic series of ObjectIds.
func objectID(i int) any {
	var id bson.ObjectID
	id[0], id[1], id[2], id[3] = 0x65, 0, 0, 0
	id[8], id[9], id[10], id[11] = byte(i>>24), byte(i>>16), byte(i>>8), byte(i)
	return id
}

// idDocs is how many documents the FindOne/*Id benchmarks read among.
const idDocs = 1000

func findByID(id func(i int) any) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		pad := padFor(size100B.bytes)
		err := seed(ctx, e.Coll, idDocs, func(i int) any {
			return bson.D{{Key: "_id", Value: id(i)}, {Key: "n", Value: int64(i)}, {Key: "pad", Value: pad}}
		})
		if err != nil {
			return nil, err
		}
		ids := make([]any, idDocs)
		for i := range ids {
			ids[i] = id(i)
		}
		return &Workload{Call: func(ctx context.Context, n int64) error {
			return findOne(ctx, e.Coll, ids[spread(n, idDocs)], 1)
		}}, nil
	}
}

// spread maps call n to a pseudo-random index below m, so that reads do
// not walk the keys in order (which would flatter any cache).
func spread(n int64, m int) int {
	return int(uint64(n) * 2654435761 % uint64(m))
}

// countFor keeps seeded volume near 10 MB whatever the document size.
func countFor(s docSize) int {
	return min(max(10<<20/s.bytes, 10), 1000)
}

func findSized(s docSize) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		count, pad := countFor(s), padFor(s.bytes)
		if err := seed(ctx, e.Coll, count, func(i int) any { return sized(int64(i), pad) }); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, n int64) error {
			return findOne(ctx, e.Coll, int64(spread(n, count)), s.bytes)
		}}, nil
	}
}

func insertSized(s docSize) func(context.Context, *Env) (*Workload, error) {
	return func(_ context.Context, e *Env) (*Workload, error) {
		pad := padFor(s.bytes)
		return &Workload{Call: func(ctx context.Context, n int64) error {
			_, err := e.Coll.InsertOne(ctx, sized(n, pad))
			return err
		}}, nil
	}
}

func updateSized(s docSize) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		count, pad := countFor(s), padFor(s.bytes)
		if err := seed(ctx, e.Coll, count, func(i int) any { return sized(int64(i), pad) }); err != nil {
			return nil, err
		}
		return &Workload{Call: func(ctx context.Context, n int64) error {
			id := int64(spread(n, count))
			return expectMatched(e.Coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: n}}}}))
		}}, nil
	}
}
