package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A reduced TPC-C: the standard schema shrunk to a few warehouses, order
// lines embedded in their order, and the three interactive transactions at
// the standard mix weights (New-Order 45, Payment 43, Order-Status 4).
const (
	tpccDistricts = 10 // per warehouse
	tpccCustomers = 30 // per district
	tpccItems     = 1000
)

func txnBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: "Txn/TPCC", Group: GroupTxn, Unit: "txn", Setup: tpccWith(2)},
		// TPC-C's contention case: eight terminals on one warehouse, whose
		// row every Payment updates. Close prints the abort rate.
		{Name: "Txn/TPCC/1W8C", Group: GroupTxn, Unit: "txn", Clients: 8, Setup: tpccWith(1)},
		// One statement in a transaction, against InsertOne/100B and
		// FindOne/IntId without one: what a transaction itself costs.
		{Name: "Txn/InsertOne", Group: GroupTxn, Unit: "txn", Setup: txnOf(insertSized(size100B))},
		{Name: "Txn/FindOne", Group: GroupTxn, Unit: "txn", Setup: txnOf(findByID(func(i int) any { return int64(i) }))},
	}
}

// txnOf runs each call of a workload as a transaction of its own.
func txnOf(setup func(context.Context, *Env) (*Workload, error)) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		w, err := setup(ctx, e)
		if err != nil {
			return nil, err
		}
		sess, err := e.Client.StartSession()
		if err != nil {
			return nil, unsupported("start session", err)
		}
		call := func(ctx context.Context, n int64) error {
			_, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) { return nil, w.Call(ctx, n) })
			return err
		}
		if err := call(ctx, -1); err != nil {
			sess.EndSession(ctx)
			return nil, unsupported("transaction", err)
		}
		return &Workload{Call: call, Close: func() { sess.EndSession(context.Background()) }}, nil
	}
}

// tpcc holds the collections; the benchmark's own collection is orders.
// Clients share it: each call has its own session and random numbers.
type tpcc struct {
	warehouse, district, customer, item, stock, orders *mongo.Collection
	client                                             *mongo.Client
	warehouses                                         int
	// attempts counts transaction bodies run, commits those committed:
	// the difference is what write conflicts aborted (and retried).
	attempts, commits atomic.Int64
}

func tpccWith(warehouses int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		t := &tpcc{warehouse: e.DB.Collection("warehouse"), district: e.DB.Collection("district"),
			customer: e.DB.Collection("customer"), item: e.DB.Collection("item"),
			stock: e.DB.Collection("stock"), orders: e.Coll, client: e.Client, warehouses: warehouses}
		// Probe before seeding: a server without transactions fails here.
		if err := t.transaction(ctx, func(ctx context.Context) (any, error) {
			return t.warehouse.InsertOne(ctx, bson.D{{Key: "_id", Value: int64(-1)}})
		}); err != nil {
			return nil, unsupported("transaction", err)
		}
		if err := t.seed(ctx); err != nil {
			return nil, err
		}
		t.attempts.Store(0)
		t.commits.Store(0)
		return &Workload{Call: t.call, Close: t.reportAborts}, nil
	}
}

// transaction runs body as a transaction of its own session.
func (t *tpcc) transaction(ctx context.Context, body func(context.Context) (any, error)) error {
	sess, err := t.client.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		t.attempts.Add(1)
		return body(ctx)
	})
	if err == nil {
		t.commits.Add(1)
	}
	return err
}

// reportAborts prints the share of transaction attempts that aborted.
func (t *tpcc) reportAborts() {
	attempts, commits := t.attempts.Load(), t.commits.Load()
	if attempts > 0 {
		fmt.Fprintf(os.Stderr, "TPC-C (%d warehouses): %d committed, %d attempts, abort rate %.1f%%\n",
			t.warehouses, commits, attempts, 100*float64(attempts-commits)/float64(attempts))
	}
}

func (t *tpcc) seed(ctx context.Context) error {
	steps := []struct {
		coll *mongo.Collection
		n    int
		mk   func(i int) any
	}{
		{t.warehouse, t.warehouses, func(i int) any { return bson.D{{Key: "_id", Value: int64(i)}, {Key: "ytd", Value: 0.0}} }},
		{t.district, t.warehouses * tpccDistricts, func(i int) any {
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "next_o_id", Value: int64(1)}, {Key: "ytd", Value: 0.0}}
		}},
		{t.customer, t.warehouses * tpccDistricts * tpccCustomers, func(i int) any {
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "balance", Value: 0.0}, {Key: "payments", Value: int64(0)}}
		}},
		{t.item, tpccItems, func(i int) any {
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "price", Value: float64(1 + i%100)}}
		}},
		{t.stock, t.warehouses * tpccItems, func(i int) any {
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "qty", Value: int64(100)}}
		}},
	}
	for _, s := range steps {
		if err := seed(ctx, s.coll, s.n, s.mk); err != nil {
			return err
		}
	}
	return nil
}

func (t *tpcc) call(ctx context.Context, n int64) error {
	rng := rand.New(rand.NewPCG(uint64(n), 8))
	w := rng.IntN(t.warehouses)
	dist := w*tpccDistricts + rng.IntN(tpccDistricts)
	cust := dist*tpccCustomers + rng.IntN(tpccCustomers)
	var body func(context.Context) (any, error)
	switch r := rng.IntN(92); {
	case r < 45:
		body = func(ctx context.Context) (any, error) { return nil, t.newOrder(ctx, rng, w, dist, cust) }
	case r < 88:
		body = func(ctx context.Context) (any, error) { return nil, t.payment(ctx, rng, w, dist, cust) }
	default:
		body = func(ctx context.Context) (any, error) { return nil, t.orderStatus(ctx, cust) }
	}
	return t.transaction(ctx, body)
}

func (t *tpcc) newOrder(ctx context.Context, rng *rand.Rand, w, dist, cust int) error {
	var district struct {
		Next int64 `bson:"next_o_id"`
	}
	err := t.district.FindOneAndUpdate(ctx, d("_id", int64(dist)), d("$inc", d("next_o_id", int64(1)))).Decode(&district)
	if err != nil {
		return fmt.Errorf("new-order district: %w", err)
	}
	var lines bson.A
	for range 5 + rng.IntN(11) {
		it, qty := int64(rng.IntN(tpccItems)), int64(1+rng.IntN(10))
		if err := t.item.FindOne(ctx, d("_id", it)).Err(); err != nil {
			return fmt.Errorf("new-order item: %w", err)
		}
		if err := expectMatched(t.stock.UpdateOne(ctx, d("_id", int64(w*tpccItems)+it), d("$inc", d("qty", -qty)))); err != nil {
			return fmt.Errorf("new-order stock: %w", err)
		}
		lines = append(lines, bson.D{{Key: "item", Value: it}, {Key: "qty", Value: qty}})
	}
	_, err = t.orders.InsertOne(ctx, bson.D{{Key: "_id", Value: int64(dist)<<32 | district.Next},
		{Key: "cust", Value: int64(cust)}, {Key: "lines", Value: lines}})
	return err
}

func (t *tpcc) payment(ctx context.Context, rng *rand.Rand, w, dist, cust int) error {
	amount := float64(1 + rng.IntN(5000))
	updates := []struct {
		coll   *mongo.Collection
		id     int
		update bson.D
	}{
		{t.warehouse, w, d("$inc", d("ytd", amount))},
		{t.district, dist, d("$inc", d("ytd", amount))},
		{t.customer, cust, d("$inc", bson.D{{Key: "balance", Value: -amount}, {Key: "payments", Value: int64(1)}})},
	}
	for _, u := range updates {
		if err := expectMatched(u.coll.UpdateOne(ctx, d("_id", int64(u.id)), u.update)); err != nil {
			return fmt.Errorf("payment %s: %w", u.coll.Name(), err)
		}
	}
	return nil
}

func (t *tpcc) orderStatus(ctx context.Context, cust int) error {
	if err := t.customer.FindOne(ctx, d("_id", int64(cust))).Err(); err != nil {
		return fmt.Errorf("order-status customer: %w", err)
	}
	err := t.orders.FindOne(ctx, d("cust", int64(cust)), options.FindOne().SetSort(d("_id", -1))).Err()
	if err != nil && err != mongo.ErrNoDocuments {
		return fmt.Errorf("order-status order: %w", err)
	}
	return nil
}
