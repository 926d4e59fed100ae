package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// A reduced TPC-C: the standard schema shrunk to a few warehouses, order
// lines embedded in their order, no history table, and the five
// transactions at the standard mix weights (New-Order 45, Payment 43,
// Order-Status 4, Delivery 4, Stock-Level 4). An order's _id is
// dist<<32 | o_id, so one district's orders are one _id range.
const (
	tpccDistricts = 10   // per warehouse
	tpccCustomers = 3000 // per district
	tpccItems     = 100000
	// Stock-Level looks at the items of the district's last 20 orders.
	tpccRecentOrders = 20
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
// newOrders is TPC-C's NEW-ORDER table: {_id: the order's _id, dist}, one
// per order not yet delivered. Clients share a tpcc: each call has its own
// session and random numbers.
type tpcc struct {
	warehouse, district, customer, item, stock, orders, newOrders *mongo.Collection
	client                                                        *mongo.Client
	warehouses                                                    int
	// attempts counts transaction bodies run, commits those committed:
	// the difference is what write conflicts aborted (and retried).
	attempts, commits atomic.Int64
}

func tpccWith(warehouses int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		t := &tpcc{warehouse: e.DB.Collection("warehouse"), district: e.DB.Collection("district"),
			customer: e.DB.Collection("customer"), item: e.DB.Collection("item"),
			stock: e.DB.Collection("stock"), orders: e.Coll, newOrders: e.DB.Collection("new_order"),
			client: e.Client, warehouses: warehouses}
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
			return bson.D{{Key: "_id", Value: int64(i)}, {Key: "balance", Value: 0.0},
				{Key: "payments", Value: int64(0)}, {Key: "deliveries", Value: int64(0)}}
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
	// The collections that start empty are created here, not by the first
	// New-Order: not every server can create a collection inside a
	// transaction, and Delivery and Stock-Level may read them first.
	for _, c := range []*mongo.Collection{t.orders, t.newOrders} {
		var se mongo.ServerError
		err := c.Database().CreateCollection(ctx, c.Name())
		if err != nil && !(errors.As(err, &se) && se.HasErrorCode(48)) { // 48: NamespaceExists
			return fmt.Errorf("create %s: %w", c.Name(), err)
		}
	}
	// TPC-C's index for Order-Status: a customer's orders, newest first.
	_, err := t.orders.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "cust", Value: 1}, {Key: "_id", Value: -1}}})
	return err
}

func (t *tpcc) call(ctx context.Context, n int64) error {
	rng := rand.New(rand.NewPCG(uint64(n), 8))
	w := rng.IntN(t.warehouses)
	dist := w*tpccDistricts + rng.IntN(tpccDistricts)
	cust := dist*tpccCustomers + rng.IntN(tpccCustomers)
	var body func(context.Context) (any, error)
	switch r := rng.IntN(100); {
	case r < 45:
		body = func(ctx context.Context) (any, error) { return nil, t.newOrder(ctx, rng, w, dist, cust) }
	case r < 88:
		body = func(ctx context.Context) (any, error) { return nil, t.payment(ctx, rng, w, dist, cust) }
	case r < 92:
		body = func(ctx context.Context) (any, error) { return nil, t.orderStatus(ctx, cust) }
	case r < 96:
		body = func(ctx context.Context) (any, error) { return nil, t.delivery(ctx, rng, w) }
	default:
		body = func(ctx context.Context) (any, error) { return nil, t.stockLevel(ctx, rng, w, dist) }
	}
	return t.transaction(ctx, body)
}

// newOrder takes the district's next order number first. Every New-Order
// of the district writes that row, and the first writer wins: as the
// first statement, a loser aborts before doing the rest of its work.
func (t *tpcc) newOrder(ctx context.Context, rng *rand.Rand, w, dist, cust int) error {
	var district struct {
		Next int64 `bson:"next_o_id"`
	}
	err := t.district.FindOneAndUpdate(ctx, d("_id", int64(dist)), d("$inc", d("next_o_id", int64(1)))).Decode(&district)
	if err != nil {
		return fmt.Errorf("new-order district: %w", err)
	}
	lines, err := t.orderLines(ctx, rng, w)
	if err != nil {
		return err
	}
	id := int64(dist)<<32 | district.Next
	_, err = t.orders.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "dist", Value: int64(dist)},
		{Key: "cust", Value: int64(cust)}, {Key: "carrier", Value: nil}, {Key: "lines", Value: lines}})
	if err != nil {
		return fmt.Errorf("new-order order: %w", err)
	}
	if _, err := t.newOrders.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "dist", Value: int64(dist)}}); err != nil {
		return fmt.Errorf("new-order new_order: %w", err)
	}
	return nil
}

// orderLines reads the price of 5 to 15 random items and takes their
// quantities from warehouse w's stock. Each line keeps its amount, which
// Delivery later charges to the customer.
func (t *tpcc) orderLines(ctx context.Context, rng *rand.Rand, w int) (bson.A, error) {
	var lines bson.A
	for range 5 + rng.IntN(11) {
		it, qty := int64(rng.IntN(tpccItems)), int64(1+rng.IntN(10))
		var item struct {
			Price float64 `bson:"price"`
		}
		if err := t.item.FindOne(ctx, d("_id", it)).Decode(&item); err != nil {
			return nil, fmt.Errorf("new-order item: %w", err)
		}
		if err := expectMatched(t.stock.UpdateOne(ctx, d("_id", int64(w*tpccItems)+it), d("$inc", d("qty", -qty)))); err != nil {
			return nil, fmt.Errorf("new-order stock: %w", err)
		}
		lines = append(lines, bson.D{{Key: "item", Value: it}, {Key: "qty", Value: qty},
			{Key: "amount", Value: item.Price * float64(qty)}})
	}
	return lines, nil
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

// delivery delivers the oldest undelivered order of each of warehouse w's
// districts, all with one carrier, as TPC-C's Delivery does.
func (t *tpcc) delivery(ctx context.Context, rng *rand.Rand, w int) error {
	carrier := int64(1 + rng.IntN(10))
	for dist := w * tpccDistricts; dist < (w+1)*tpccDistricts; dist++ {
		if err := t.deliver(ctx, dist, carrier); err != nil {
			return err
		}
	}
	return nil
}

// deliver removes the district's oldest new_order (the lowest _id of its
// range), stamps the carrier on the order and charges the customer the
// sum of the order's lines. A district with nothing pending is skipped.
func (t *tpcc) deliver(ctx context.Context, dist int, carrier int64) error {
	lo := int64(dist) << 32
	var pending struct {
		ID int64 `bson:"_id"`
	}
	err := t.newOrders.FindOneAndDelete(ctx, d("_id", bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + 1<<32}}),
		options.FindOneAndDelete().SetSort(d("_id", 1))).Decode(&pending)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delivery new_order: %w", err)
	}
	var order struct {
		Cust  int64 `bson:"cust"`
		Lines []struct {
			Amount float64 `bson:"amount"`
		} `bson:"lines"`
	}
	fields := bson.D{{Key: "cust", Value: 1}, {Key: "lines.amount", Value: 1}}
	err = t.orders.FindOneAndUpdate(ctx, d("_id", pending.ID), d("$set", d("carrier", carrier)),
		options.FindOneAndUpdate().SetProjection(fields)).Decode(&order)
	if err != nil {
		return fmt.Errorf("delivery order: %w", err)
	}
	var sum float64
	for _, l := range order.Lines {
		sum += l.Amount
	}
	update := d("$inc", bson.D{{Key: "balance", Value: sum}, {Key: "deliveries", Value: int64(1)}})
	if err := expectMatched(t.customer.UpdateOne(ctx, d("_id", order.Cust), update)); err != nil {
		return fmt.Errorf("delivery customer: %w", err)
	}
	return nil
}

// stockLevel counts the items of the district's last 20 orders whose
// stock in warehouse w is below a random threshold. It only reads; the
// transaction gives its three reads one snapshot.
func (t *tpcc) stockLevel(ctx context.Context, rng *rand.Rand, w, dist int) error {
	threshold := int64(10 + rng.IntN(11))
	var district struct {
		Next int64 `bson:"next_o_id"`
	}
	if err := t.district.FindOne(ctx, d("_id", int64(dist))).Decode(&district); err != nil {
		return fmt.Errorf("stock-level district: %w", err)
	}
	items, err := t.recentItems(ctx, dist, district.Next)
	if err != nil {
		return err
	}
	ids := make(bson.A, len(items))
	for i, it := range items {
		ids[i] = int64(w*tpccItems) + it
	}
	filter := bson.D{{Key: "_id", Value: d("$in", ids)}, {Key: "qty", Value: d("$lt", threshold)}}
	if _, err := t.stock.CountDocuments(ctx, filter); err != nil {
		return fmt.Errorf("stock-level stock: %w", err)
	}
	return nil
}

// recentItems returns the distinct items of the district's orders
// numbered from next-20 up to next (exclusive): its last 20 orders.
func (t *tpcc) recentItems(ctx context.Context, dist int, next int64) ([]int64, error) {
	lo := int64(dist) << 32
	// Order numbers start at 1: clamp, since a negative number would set
	// the district bits of the _id.
	filter := d("_id", bson.D{{Key: "$gte", Value: lo | max(next-tpccRecentOrders, 0)}, {Key: "$lt", Value: lo | next}})
	cur, err := t.orders.Find(ctx, filter, options.Find().SetProjection(d("lines.item", 1)))
	if err != nil {
		return nil, fmt.Errorf("stock-level orders: %w", err)
	}
	var orders []struct {
		Lines []struct {
			Item int64 `bson:"item"`
		} `bson:"lines"`
	}
	if err := cur.All(ctx, &orders); err != nil {
		return nil, fmt.Errorf("stock-level orders: %w", err)
	}
	seen := map[int64]bool{}
	var items []int64
	for _, o := range orders {
		for _, l := range o.Lines {
			if !seen[l.Item] {
				seen[l.Item] = true
				items = append(items, l.Item)
			}
		}
	}
	return items, nil
}
