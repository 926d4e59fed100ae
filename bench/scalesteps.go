package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The Scale family's queries and writes (scale.go lists them in order).
// Call c picks its customer or seq with spread, so that successive calls
// do not read neighbouring keys; every result is checked.

// countUnindexed counts one customer's orders before customer is indexed:
// a scan of the whole collection.
func countUnindexed(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	return &Workload{Call: func(ctx context.Context, c int64) error {
		got, err := d.coll.CountDocuments(ctx, kvs("customer", int32(spread(c, customers(d.n)))))
		if err != nil {
			return err
		}
		return expectCount("countDocuments", int(got), 100)
	}}, nil
}

// findUnindexed finds a customer's pending orders (about 10) before any
// index: a scan.
func findUnindexed(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	return &Workload{Call: func(ctx context.Context, c int64) error {
		cust := spread(c, customers(d.n))
		return findAll(ctx, d.coll, kvs("customer", int32(cust), "status", orderStatuses[0]), pendingOrders(cust, d.n))
	}}, nil
}

// pendingOrders counts customer cust's pending orders by making them
// again: its orders are cust, cust + n/100, cust + 2n/100, ...
func pendingOrders(cust, n int) int {
	count := 0
	for i := cust; i < n; i += customers(n) {
		if newOrder(i, n).status == orderStatuses[0] {
			count++
		}
	}
	return count
}

// groupByStatus counts the orders of each status over the whole
// collection.
func groupByStatus(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	pipeline := mongo.Pipeline{{{Key: "$group", Value: kvs("_id", "$status", "n", kvs("$sum", 1))}}}
	return &Workload{Call: func(ctx context.Context, _ int64) error {
		cur, err := d.coll.Aggregate(ctx, pipeline)
		if err != nil {
			return err
		}
		var groups []struct {
			N int `bson:"n"`
		}
		if err := cur.All(ctx, &groups); err != nil {
			return err
		}
		total := 0
		for _, g := range groups {
			total += g.N
		}
		if len(groups) != len(orderStatuses) || total != d.n {
			return fmt.Errorf("$group by status: %d groups of %d orders, want %d of %d", len(groups), total, len(orderStatuses), d.n)
		}
		return nil
	}}, nil
}

// sortUnindexed reads the 10 largest amounts, with no index to read them
// from.
func sortUnindexed(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	opts := options.Find().SetSort(kvs("amount", -1)).SetLimit(10)
	return &Workload{Call: func(ctx context.Context, _ int64) error {
		cur, err := d.coll.Find(ctx, bson.D{}, opts)
		if err != nil {
			return err
		}
		var got []bson.Raw
		if err := cur.All(ctx, &got); err != nil {
			return err
		}
		return expectCount("sort + limit", len(got), 10)
	}}, nil
}

// scaleIndexes are the indexes the CreateIndex steps build, in order.
var scaleIndexes = []struct {
	name   string
	keys   bson.D
	unique bool
}{
	{"Single", kvs("customer", 1), false},
	{"Compound", kvs("status", 1, "amount", 1), false},
	{"Multikey", kvs("items.sku", 1), false},
	{"Unique", kvs("seq", 1), true},
}

func scaleIndex(i int) mongo.IndexModel {
	ix := scaleIndexes[i]
	return mongo.IndexModel{Keys: ix.keys, Options: options.Index().SetUnique(ix.unique)}
}

// createScaleIndex builds index i over the loaded collection.
func createScaleIndex(i int) func(context.Context, *Env, *scaleData) (*Workload, error) {
	return func(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
		return &Workload{Call: func(ctx context.Context, _ int64) error {
			_, err := d.coll.Indexes().CreateOne(ctx, scaleIndex(i))
			return err
		}}, nil
	}
}

// indexed makes sure the CreateIndex steps' indexes exist, untimed (those
// steps may have been filtered out; building an existing index does
// nothing), then sets the step up.
func indexed(setup func(context.Context, *Env, *scaleData) (*Workload, error)) func(context.Context, *Env, *scaleData) (*Workload, error) {
	return func(ctx context.Context, e *Env, d *scaleData) (*Workload, error) {
		for i := range scaleIndexes {
			if _, err := d.coll.Indexes().CreateOne(ctx, scaleIndex(i)); err != nil {
				return nil, unsupported("createIndexes", err)
			}
		}
		return setup(ctx, e, d)
	}
}

// findSeq finds one order by its unique seq.
func findSeq(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	return &Workload{Call: func(ctx context.Context, c int64) error {
		return findAll(ctx, d.coll, kvs("seq", int32(spread(c, d.n))), 1)
	}}, nil
}

// findCustomer finds one customer's 100 orders.
func findCustomer(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	return &Workload{Call: func(ctx context.Context, c int64) error {
		return findAll(ctx, d.coll, kvs("customer", int32(spread(c, customers(d.n)))), 100)
	}}, nil
}

// findSeqRange finds the orders of a range of width seqs (all of them
// when the collection is smaller).
func findSeqRange(width int) func(context.Context, *Env, *scaleData) (*Workload, error) {
	return func(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
		w := min(width, d.n)
		return &Workload{Call: func(ctx context.Context, c int64) error {
			lo := int32(spread(c, d.n-w+1))
			return findAll(ctx, d.coll, kvs("seq", kvs("$gte", lo, "$lt", lo+int32(w))), w)
		}}, nil
	}
}

// findCovered finds one customer's orders projecting the indexed field
// alone, without _id: the index holds everything the reply needs.
func findCovered(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	opts := options.Find().SetProjection(kvs("_id", 0, "customer", 1))
	return &Workload{Call: func(ctx context.Context, c int64) error {
		cust := int32(spread(c, customers(d.n)))
		cur, err := d.coll.Find(ctx, kvs("customer", cust), opts)
		if err != nil {
			return err
		}
		var got []bson.D
		if err := cur.All(ctx, &got); err != nil {
			return err
		}
		for _, doc := range got {
			if len(doc) != 1 || doc[0].Key != "customer" {
				return fmt.Errorf("covered find returned %v, want {customer: %d}", doc, cust)
			}
		}
		return expectCount("covered find", len(got), 100)
	}}, nil
}

// updateOnePercent sets the note of one order in 100, all over the
// collection (seq mod 100 = c mod 100), to a value of this call's own.
// No later step reads note.
func updateOnePercent(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	return &Workload{Call: func(ctx context.Context, c int64) error {
		return changeOnePercent(ctx, d.coll, d.n, int(c%100), fmt.Sprintf("updated %d", c))
	}}, nil
}

// changeOnePercent sets note to value in the orders whose seq is slice
// modulo 100.
func changeOnePercent(ctx context.Context, coll *mongo.Collection, n, slice int, value string) error {
	res, err := coll.UpdateMany(ctx, kvs("seq", kvs("$mod", bson.A{100, slice})), kvs("$set", kvs("note", value)))
	if err != nil {
		return err
	}
	return expectCount("updateMany", int(res.MatchedCount), n/100)
}
