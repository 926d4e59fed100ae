package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The Scale family's documents: order i of a collection of n is
//
//	{_id: ObjectId, seq: i, customer: i mod n/100, status, amount, note,
//	 items: [{sku, qty}, {sku, qty}]}
//
// about 190 bytes of BSON. seq is unique (a find by it returns one
// document, a range of it as many as it spans); each of the n/100
// customers has exactly 100 orders, spread over the whole collection.
// The other fields come from a generator seeded by i, so that any order
// can be made again alone, in any order, on any run.

// scaleSeed seeds every order's generator.
const scaleSeed = 0x5ca1e

// orderStatuses are the three status values: 10 % of orders are
// pending, 30 % shipped, 60 % delivered.
var orderStatuses = [...]string{"pending", "shipped", "delivered"}

var orderNotes = [...]string{"", "gift", "fragile", "leave at door", "call on arrival", "express"}

// order is one document's values.
type order struct {
	seq      int
	customer int32
	status   string
	amount   float64
	note     string
	skus     [2]int
	qty      [2]int32
}

// customers is how many distinct customers a collection of n has.
func customers(n int) int { return n / 100 }

func newOrder(i, n int) order {
	rng := rand.New(rand.NewPCG(scaleSeed, uint64(i)))
	o := order{seq: i, customer: int32(i % customers(n))}
	switch p := rng.IntN(10); {
	case p == 0:
		o.status = orderStatuses[0]
	case p < 4:
		o.status = orderStatuses[1]
	default:
		o.status = orderStatuses[2]
	}
	o.amount = float64(rng.IntN(100_000)) / 100
	o.note = orderNotes[rng.IntN(len(orderNotes))]
	for k := range o.skus {
		o.skus[k], o.qty[k] = rng.IntN(20_000), int32(1+rng.IntN(5))
	}
	return o
}

// appendBSON appends the order as a BSON document to dst.
func (o order) appendBSON(dst []byte) []byte {
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendObjectIDElement(dst, "_id", [12]byte(objectID(o.seq).(bson.ObjectID)))
	dst = bsoncore.AppendInt32Element(dst, "seq", int32(o.seq))
	dst = bsoncore.AppendInt32Element(dst, "customer", o.customer)
	dst = bsoncore.AppendStringElement(dst, "status", o.status)
	dst = bsoncore.AppendDoubleElement(dst, "amount", o.amount)
	dst = bsoncore.AppendStringElement(dst, "note", o.note)
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "items")
	for k := range o.skus {
		var sidx int32
		sidx, dst = bsoncore.AppendDocumentElementStart(dst, strconv.Itoa(k))
		dst = bsoncore.AppendStringElement(dst, "sku", sku(o.skus[k]))
		dst = bsoncore.AppendInt32Element(dst, "qty", o.qty[k])
		dst, _ = bsoncore.AppendDocumentEnd(dst, sidx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

func sku(k int) string { return fmt.Sprintf("SKU-%05d", k) }

// loadBatch is the documents one insertMany carries; loadClients insert
// at once, as an import tool would.
const (
	loadBatch   = 1000
	loadClients = 4
)

// loadOrders inserts the n orders into coll, loadClients batches at a
// time, and returns their BSON size.
func loadOrders(ctx context.Context, coll *mongo.Collection, n int) (int64, error) {
	var next, total atomic.Int64
	errs := make([]error, loadClients)
	var wg sync.WaitGroup
	for c := range loadClients {
		wg.Go(func() {
			for {
				lo := int(next.Add(loadBatch)) - loadBatch
				if lo >= n {
					return
				}
				size, err := insertOrders(ctx, coll, lo, min(lo+loadBatch, n), n)
				if err != nil {
					errs[c] = fmt.Errorf("load at order %d: %w", lo, err)
					return
				}
				total.Add(size)
			}
		})
	}
	wg.Wait()
	return total.Load(), errors.Join(errs...)
}

// insertOrders inserts orders lo to hi (excluded) of n in one insertMany
// and returns their BSON size.
func insertOrders(ctx context.Context, coll *mongo.Collection, lo, hi, n int) (int64, error) {
	docs := make([]any, 0, hi-lo)
	var size int64
	for i := lo; i < hi; i++ {
		raw := newOrder(i, n).appendBSON(nil)
		size += int64(len(raw))
		docs = append(docs, bson.Raw(raw))
	}
	_, err := coll.InsertMany(ctx, docs)
	return size, err
}

// load is the Load step: the timed call loads the target's collection,
// which the steps after it share.
func (s *scaleSize) load(ctx context.Context, e *Env) (*Workload, error) {
	d, err := s.fresh(ctx, e)
	if err != nil {
		return nil, err
	}
	return &Workload{Call: func(ctx context.Context, _ int64) error { return s.fill(ctx, e, d) }}, nil
}

// loadNow loads the target's collection untimed.
func (s *scaleSize) loadNow(ctx context.Context, e *Env) (*scaleData, error) {
	d, err := s.fresh(ctx, e)
	if err != nil {
		return nil, err
	}
	return d, s.fill(ctx, e, d)
}

// fresh drops the size's database on the target and reads the size of
// the data directory without it, which the Disk steps subtract.
func (s *scaleSize) fresh(ctx context.Context, e *Env) (*scaleData, error) {
	s.release(ctx, e)
	d := &scaleData{n: s.n, db: s.database(e)}
	d.coll = d.db.Collection("orders")
	if e.DataDir != "" {
		var err error
		if d.dirBefore, err = liveBytes(e.DataDir); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// fill loads the orders into d's collection, for the steps after to
// share, and on DumboDB makes a checkpoint: DumboDB keeps acknowledged
// writes in its log and in memory until one (every 60 s, or at fsync), so
// this way the load includes building its trees, as FerretDB's includes
// writing its files, and the steps after it read the trees rather than
// the writes held in memory.
func (s *scaleSize) fill(ctx context.Context, e *Env, d *scaleData) error {
	var err error
	if d.bsonBytes, err = loadOrders(ctx, d.coll, s.n); err != nil {
		return err
	}
	if err := checkpoint(ctx, e); err != nil {
		return err
	}
	s.loaded[e.URL] = d
	return nil
}

// checkpoint flushes DumboDB's writes to its files (fsync checkpoints
// every database); other servers write them at once.
func checkpoint(ctx context.Context, e *Env) error {
	if !e.Dumbo {
		return nil
	}
	return e.Client.Database("admin").RunCommand(ctx, kvs("fsync", 1)).Err()
}

// bulkLoad is the BulkLoad step: the same orders through dumboBulkLoad
// (bulkLoad in bulk.go), into a database of their own that is dropped
// afterwards (so that the Disk steps, which leave dropped databases out,
// do not count them). The pieces are made as they are sent, so that the
// client holds one piece at a time whatever the size.
func (s *scaleSize) bulkLoad(ctx context.Context, e *Env) (*Workload, error) {
	db := e.Client.Database(s.database(e).Name() + "_bulk")
	if err := db.Drop(ctx); err != nil {
		return nil, err
	}
	coll := db.Collection("orders")
	return &Workload{
		Close: func() { db.Drop(context.Background()) },
		Call: func(ctx context.Context, _ int64) error {
			return bulkLoadOrders(ctx, coll, s.n)
		},
	}, nil
}

func bulkLoadOrders(ctx context.Context, coll *mongo.Collection, n int) error {
	upload := fmt.Sprintf("%032x", time.Now().UnixNano()) // 16 to 64 hexadecimal digits, new each load
	send := func(piece []byte, off int) error {
		cmd := kvs("dumboBulkLoad", coll.Name(), "upload", upload, "offset", off, "data", bson.Binary{Data: piece})
		return coll.Database().RunCommand(ctx, cmd).Err()
	}
	piece := make([]byte, 0, bulkLoadPiece+1024)
	off := 0
	for i := range n {
		piece = newOrder(i, n).appendBSON(piece)
		if len(piece) >= bulkLoadPiece || i == n-1 {
			if err := send(piece, off); err != nil {
				return err
			}
			off += len(piece)
			piece = piece[:0]
		}
	}
	var res struct {
		N int `bson:"n"`
	}
	cmd := kvs("dumboBulkLoad", coll.Name(), "upload", upload, "finish", true)
	if err := coll.Database().RunCommand(ctx, cmd).Decode(&res); err != nil {
		return err
	}
	return expectCount("dumboBulkLoad", res.N, n)
}
