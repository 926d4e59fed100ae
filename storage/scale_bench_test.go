package storage

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/index"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// orderDocs is the number of documents of the scale benchmarks' fixture:
// enough that index builds and range reads show their per-document cost.
const orderDocs = 100_000

// orderDoc is an order of about 180 bytes, the shape dumbobench's Scale
// family loads: customer i%1000 (100 orders each), a status, an amount,
// a note and two line items.
func orderDoc(i int32) bsoncore.Document {
	items := bsoncore.NewArrayBuilder()
	for k := int32(0); k < 2; k++ {
		items.AppendDocument(bsoncore.NewDocumentBuilder().
			AppendString("sku", fmt.Sprintf("sku-%05d", (i*7+k)%5000)).AppendInt32("qty", 1+k).Build())
	}
	return bsoncore.NewDocumentBuilder().
		AppendInt32("_id", i).
		AppendInt32("customer", i%(orderDocs/100)).
		AppendString("status", [...]string{"new", "paid", "shipped"}[i%3]).
		AppendDouble("amount", float64(i%10000)/100).
		AppendString("note", "leave at the door, ring twice").
		AppendArray("items", items.Build()).
		Build()
}

// orderDatabase is a checkpointed database of orderDocs orders in
// collection "orders", indexed on customer.
func orderDatabase(b *testing.B) *Database {
	e, err := Open(b.TempDir(), Options{CheckpointInterval: time.Hour}, discardLog())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	d, _ := e.Database(ctx, "db", true)
	if err := loadOrders(d); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkOrders100K measures, over one fixture of 100,000 orders (its
// load takes seconds, so the benchmarks share it), what grows with the
// data: an index build, an index range read and a filtered scan
// (go test ./storage -run '^$' -bench Orders100K -benchmem).
func BenchmarkOrders100K(b *testing.B) {
	d := orderDatabase(b)
	b.Run("IndexBuild", func(b *testing.B) { benchIndexBuild(b, d) })
	b.Run("IndexRangeRead", func(b *testing.B) { benchIndexRangeRead(b, d, false) })
	b.Run("IndexRangeReadBatched", func(b *testing.B) { benchIndexRangeRead(b, d, true) })
	b.Run("FilteredScan", func(b *testing.B) { benchFilteredScan(b, d) })
}

func loadOrders(d *Database) error {
	for from := int32(0); from < orderDocs; from += 10_000 {
		err := d.Write(NoSync(ctx), func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "orders"); err != nil {
				return err
			}
			for i := from; i < from+10_000; i++ {
				if err := tx.Insert(ctx, "orders", orderDoc(i)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := d.Write(ctx, func(tx *Tx) error {
		return tx.SetIndexes(ctx, "orders", []bsoncore.Document{indexSpec("customer_1", false, "customer")})
	}); err != nil {
		return err
	}
	return d.Checkpoint(ctx)
}

// benchIndexBuild builds indexes over the orders from a snapshot, as
// createIndexes does before it takes the branch's lock.
func benchIndexBuild(b *testing.B, d *Database) {
	for name, spec := range map[string]bsoncore.Document{
		"single":   indexSpec("status_1", false, "status"),
		"compound": indexSpec("status_1_amount_1", false, "status", "amount"),
		"multikey": indexSpec("items.sku_1", false, "items.sku"),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				snap := mainSnapshot(b, d)
				p, err := PrepareIndexes(ctx, snap, "orders", []bsoncore.Document{spec})
				if err != nil || len(p.built) != 1 {
					b.Fatalf("built %v, %v", p, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/orderDocs, "ns/doc")
		})
	}
}

// benchIndexRangeRead reads the 100 orders of one customer through the
// index: the entries, then each document, or all of them in one batch.
func benchIndexRangeRead(b *testing.B, d *Database, batched bool) {
	snap := mainSnapshot(b, d)
	b.ReportAllocs()
	for i := range b.N {
		customer := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i%(orderDocs/100)))}
		k := index.EncodeKey(nil, customer)
		it, err := snap.IndexScan(ctx, "orders", "customer_1", index.Interval{Start: k, Stop: append(k, index.AfterPrefix)})
		if err != nil {
			b.Fatal(err)
		}
		var ids [][]byte
		for {
			_, id, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if batched {
				ids = append(ids, id)
			} else if _, found, err := snap.GetKey(ctx, "orders", id); err != nil || !found {
				b.Fatal(found, err)
			} else {
				ids = append(ids, nil)
			}
		}
		if batched {
			docs, err := snap.GetKeys(ctx, "orders", ids)
			if err != nil || docs[len(docs)-1] == nil {
				b.Fatal(err)
			}
		}
		if len(ids) != 100 {
			b.Fatalf("%d orders", len(ids))
		}
	}
}

// benchFilteredScan scans every order and reads one field of each, as an
// unindexed equality filter does.
func benchFilteredScan(b *testing.B, d *Database) {
	snap := mainSnapshot(b, d)
	b.ReportAllocs()
	for range b.N {
		it, err := snap.Scan(ctx, "orders")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			doc, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if doc.Lookup("status").StringValue() == "paid" {
				n++
			}
		}
		if n != orderDocs/3 {
			b.Fatalf("%d paid", n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/orderDocs, "ns/doc")
}
