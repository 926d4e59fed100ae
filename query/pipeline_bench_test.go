package query

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Pipelines over documents in memory: the cost of the stages themselves,
// without storage or the network, for the streaming (per document) and
// blocking paths. Besides wall time they report the CPU time the process
// used per operation (cpu-ns/op), which other work on a shared machine
// disturbs far less.

func benchPipeline(b *testing.B, pipeline string, cat memCatalog, in []bsoncore.Document, want int) {
	p, err := CompilePipelineOpts(mustDoc(b, `{"p": `+pipeline+`}`).Lookup("p").Array(), PipelineOptions{Catalog: cat})
	if err != nil {
		b.Fatal(err)
	}
	start := cpuTime()
	for b.Loop() {
		out, err := Drain(context.Background(), p.Run(NewSliceStream(in)))
		if err != nil || len(out) != want {
			b.Fatalf("%d documents, %v", len(out), err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process has used, all threads (the
// collector's too).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDocs is n documents {_id: i, k: i % 100, v: i, s: <text>}.
func benchDocs(n int) []bsoncore.Document {
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("k", int32(i%100)).
			AppendDouble("v", float64(i)).AppendString("s", "some text to make the document longer").Build()
	}
	return docs
}

func BenchmarkAggProject50K(b *testing.B) {
	benchPipeline(b, `[{"$project": {"k": 1, "w": {"$multiply": ["$v", 2]}}}]`, nil, benchDocs(50000), 50000)
}

func BenchmarkAggMatchGroup50K(b *testing.B) {
	benchPipeline(b, `[{"$match": {"v": {"$gte": 0}}}, {"$group": {"_id": "$k", "n": {"$sum": 1}, "t": {"$sum": "$v"}}}]`,
		nil, benchDocs(50000), 100)
}

func BenchmarkAggSort50K(b *testing.B) {
	benchPipeline(b, `[{"$sort": {"v": -1}}]`, nil, benchDocs(50000), 50000)
}

func BenchmarkAggUnwind50K(b *testing.B) {
	ab := bsoncore.NewArrayBuilder()
	for i := 0; i < 50; i++ {
		ab.AppendInt32(int32(i))
	}
	arr := ab.Build()
	docs := make([]bsoncore.Document, 1000)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendArray("a", arr).Build()
	}
	benchPipeline(b, `[{"$unwind": "$a"}, {"$count": "n"}]`, nil, docs, 1)
}

func BenchmarkAggLookup100x50K(b *testing.B) {
	local := benchDocs(100)
	benchPipeline(b, `[{"$lookup": {"from": "f", "localField": "_id", "foreignField": "_id", "as": "m"}}]`,
		memCatalog{"f": benchDocs(50000)}, local, 100)
}
