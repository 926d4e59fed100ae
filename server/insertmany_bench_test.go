package server_test

import (
	"bufio"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BenchmarkInsertMany1000Raw is Raw/InsertMany/1000 of dumbobench in
// process: one connection sends insert commands of 1,000 documents of
// about 100 B in a document sequence, durable ({w: 1, j: true}), as a
// driver frames them; -benchmem gives the server's allocations per batch
// (the client's are a few). ns/op is per batch of 1,000; p50-µs, p99-µs
// and max-µs are the batches' latencies, whose tail shows what stalls the
// write path (a change-log segment's sync took the p99 to 34 ms).
func BenchmarkInsertMany1000Raw(b *testing.B) { benchInsertRaw(b, 1000) }

// BenchmarkInsertOneRaw is Raw/Insert/1: one document an insert command;
// -benchmem gives the server's allocations per insert.
func BenchmarkInsertOneRaw(b *testing.B) { benchInsertRaw(b, 1) }

func BenchmarkInsertMany1000RawNoAutoGC(b *testing.B) {
	benchInsertRawWith(b, 1000, storage.Options{AutoGCMaxBytes: -1})
}

func benchInsertRaw(b *testing.B, batch int) { benchInsertRawWith(b, batch, storage.Options{}) }

func benchInsertRawWith(b *testing.B, batch int, opts storage.Options) {
	ts := startServerWith(b, opts)
	nc := ts.dial()
	r := bufio.NewReader(nc)
	docs := make([]bsoncore.Document, batch)
	pad := string(make([]byte, 70))
	body := bsoncore.NewDocumentBuilder().AppendString("insert", "c").AppendBoolean("ordered", true).
		AppendDocument("writeConcern", bsoncore.NewDocumentBuilder().AppendInt32("w", 1).AppendBoolean("j", true).Build()).
		AppendString("$db", "bench").Build()
	for j := range docs {
		docs[j] = bsoncore.NewDocumentBuilder().AppendInt64("_id", 0).
			AppendInt64("n", 0).AppendString("pad", pad).Build()
	}
	msg := &wire.Msg{Body: body, Sequences: []wire.Sequence{{Identifier: "documents", Documents: docs}}}
	b.ReportAllocs()
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for j, d := range docs {
			// The _id's value follows the length, the type byte and "_id\x00".
			binary.LittleEndian.PutUint64(d[4+1+4:], uint64(i*len(docs)+j))
		}
		if err := wire.Write(nc, int32(i+1), 0, msg, 0); err != nil {
			b.Fatal(err)
		}
		_, reply, _, err := wire.Read(r)
		if err != nil {
			b.Fatal(err)
		}
		if n, ok := reply.(*wire.Msg).Body.Lookup("n").AsInt32OK(); !ok || n != int32(len(docs)) {
			b.Fatalf("reply %v", reply.(*wire.Msg).Body)
		}
		took = append(took, time.Since(t0))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(took[len(took)-1].Microseconds()), "max-µs")
}
