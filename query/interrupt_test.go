package query

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// Interruption: each long-running operation kind, over an input that
// would keep it busy for seconds, stops with MaxTimeMSExpired once its
// context's deadline of a few milliseconds passes. The tests assert the
// code only: how soon it comes is up to a loaded machine.

// plainStream serves documents without looking at the context, so that
// only the stage under test can notice the deadline.
type plainStream struct{ docs []bsoncore.Document }

func (s *plainStream) Next(context.Context) (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, io.EOF
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}

// numbered is n documents {_id: i, k: i % mod, s: <pad>}.
func numbered(n, mod int, pad string) []bsoncore.Document {
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i)).
			AppendInt64("k", int64(i%mod)).AppendString("s", pad).Build()
	}
	return docs
}

// chain is n documents {_id: i, next: i + 1}: a path for $graphLookup.
func chain(n int) []bsoncore.Document {
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt64("_id", int64(i)).AppendInt64("next", int64(i+1)).Build()
	}
	return docs
}

// runUntil runs pipeline over in under ctx and returns its error.
func runUntil(ctx context.Context, t *testing.T, pipeline string, opts PipelineOptions, in Stream) error {
	t.Helper()
	p, err := CompilePipelineOpts(mustValue(t, pipeline).Data, opts)
	if err != nil {
		t.Fatal(err)
	}
	rp := p.Run(in)
	defer rp.Close()
	_, err = Drain(ctx, rp)
	return err
}

func wantCode(t *testing.T, err error, code mongoerr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("finished; want error %d", code)
	}
	if got := mongoerr.As(err).Code; got != code {
		t.Fatalf("error %v (%d), want code %d", err, got, code)
	}
}

func TestInterruptedByDeadline(t *testing.T) {
	wide := numbered(200000, 1000, "")
	cases := []struct {
		name, pipeline string
		in             func() Stream
		colls          memCatalog
		opts           PipelineOptions
	}{
		{name: "sort", pipeline: `[{"$sort": {"k": -1}}]`,
			in: func() Stream { return NewSliceStream(numbered(300000, 7, "")) }},
		{name: "sort spilled", pipeline: `[{"$sort": {"k": -1}}]`,
			in:   func() Stream { return &plainStream{numbered(300000, 7, "")} },
			opts: PipelineOptions{AllowDiskUse: true, MemoryLimit: 1 << 20}},
		{name: "group", pipeline: `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`,
			in: func() Stream { return NewSliceStream(numbered(1000000, 7, "")) }},
		{name: "bucket", pipeline: `[{"$bucket": {"groupBy": "$k", "boundaries": [0, 3, 10]}}]`,
			in: func() Stream { return NewSliceStream(numbered(1000000, 7, "")) }},
		{name: "bucketAuto", pipeline: `[{"$bucketAuto": {"groupBy": "$_id", "buckets": 3}}]`,
			in: func() Stream { return &plainStream{numbered(300000, 7, "")} }},
		{name: "facet", pipeline: `[{"$facet": {"a": [{"$sort": {"k": 1}}], "b": [{"$sort": {"k": -1}}], "c": [{"$group": {"_id": "$_id"}}]}}]`,
			in: func() Stream { return &plainStream{wide} }},
		{name: "lookup localField", pipeline: `[{"$lookup": {"from": "f", "localField": "k", "foreignField": "k", "as": "m"}}, {"$project": {"m": 0}}]`,
			in:    func() Stream { return &plainStream{numbered(200, 2, "")} },
			colls: memCatalog{"f": numbered(20000, 2, "")}},
		{name: "lookup pipeline", pipeline: `[{"$lookup": {"from": "f", "let": {"k": "$k"}, "pipeline": [{"$match": {"$expr": {"$eq": ["$k", "$$k"]}}}], "as": "m"}}]`,
			in:    func() Stream { return &plainStream{numbered(1500, 1500, "")} },
			colls: memCatalog{"f": numbered(1500, 1500, "")}},
		{name: "lookup three levels", pipeline: `[{"$lookup": {"from": "f", "pipeline": [
				{"$lookup": {"from": "f", "pipeline": [
					{"$lookup": {"from": "f", "pipeline": [{"$match": {"$expr": {"$lt": ["$_id", 0]}}}], "as": "l3"}}], "as": "l2"}}], "as": "l1"}}]`,
			in:    func() Stream { return &plainStream{numbered(40, 40, "")} },
			colls: memCatalog{"f": numbered(40, 40, "")}},
		{name: "graphLookup", pipeline: `[{"$graphLookup": {"from": "f", "startWith": 0, "connectFromField": "next", "connectToField": "_id", "as": "path"}}, {"$project": {"path": 0}}]`,
			in:    func() Stream { return &plainStream{numbered(250, 1, "")} },
			colls: memCatalog{"f": chain(2000)}},
		{name: "graphLookup scanning", pipeline: `[{"$graphLookup": {"from": "f", "startWith": 0, "connectFromField": "next", "connectToField": "_id", "as": "path", "maxMemoryUsageBytes": 1000000000}}]`,
			in:    func() Stream { return &plainStream{numbered(1, 1, "")} },
			colls: memCatalog{"f": chain(3000)}, opts: PipelineOptions{MemoryLimit: 1000}},
		{name: "unionWith", pipeline: `[{"$unionWith": "f"}, {"$count": "n"}]`,
			in:    func() Stream { return &plainStream{} },
			colls: memCatalog{"f": numbered(1000000, 1, "")}},
		{name: "setWindowFields", pipeline: `[{"$setWindowFields": {"sortBy": {"_id": 1}, "output": {"s": {"$sum": "$k", "window": {"documents": [-500, 500]}}}}}]`,
			in: func() Stream { return &plainStream{numbered(20000, 7, "")} }},
		{name: "densify", pipeline: `[{"$densify": {"field": "k", "range": {"step": 1, "bounds": [0, 3000000]}}}, {"$count": "n"}]`,
			in: func() Stream { return &plainStream{numbered(1, 1, "")} }},
		{name: "unwind", pipeline: `[{"$unwind": "$a"}, {"$count": "n"}]`,
			in: func() Stream { return &plainStream{[]bsoncore.Document{hugeArrayDoc(1000000)}} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			opts.Catalog = c.colls
			in := c.in()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			defer cancel()
			wantCode(t, runUntil(ctx, t, c.pipeline, opts, in), mongoerr.MaxTimeMSExpired)
		})
	}
}

// hugeArrayDoc is {_id: 0, a: [0, 1, ..., n-1]}.
func hugeArrayDoc(n int) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for i := 0; i < n; i++ {
		arr.AppendInt32(int32(i))
	}
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", 0).AppendArray("a", arr.Build()).Build()
}

// TestInterruptedByCancel: a cancelled context (the client went away, the
// operation was killed) stops a three-level $lookup with Interrupted.
func TestInterruptedByCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	err := runUntil(ctx, t, `[{"$lookup": {"from": "f", "pipeline": [
		{"$lookup": {"from": "f", "pipeline": [
			{"$lookup": {"from": "f", "pipeline": [], "as": "l3"}}], "as": "l2"}}], "as": "l1"}}]`,
		PipelineOptions{Catalog: memCatalog{"f": numbered(40, 40, "")}}, &plainStream{numbered(40, 40, "")})
	wantCode(t, err, mongoerr.Interrupted)
	if !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("message %q", err)
	}
}

// TestInterruptedWrites: $merge stops between the documents it writes.
func TestInterruptedWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	w := &countingWriter{}
	err := runUntil(ctx, t, `[{"$merge": "out"}]`, PipelineOptions{DB: "test", Writer: w},
		&plainStream{numbered(1000000, 1, "")})
	wantCode(t, err, mongoerr.MaxTimeMSExpired)
	if w.inserted == 1000000 {
		t.Error("every document was written")
	}
}

// countingWriter is a Writer whose target holds nothing and counts the
// documents inserted into it.
type countingWriter struct{ inserted int }

func (w *countingWriter) Replace(context.Context, string, string, []bsoncore.Document) error {
	return errors.New("$out is not under test")
}

func (w *countingWriter) Update(_ context.Context, _, _ string, fn func(t WriteTarget) error) error {
	return fn(countingTarget{w})
}

type countingTarget struct{ w *countingWriter }

func (countingTarget) Get(context.Context, bsoncore.Value) (bsoncore.Document, bool, error) {
	return nil, false, nil
}

func (t countingTarget) Insert(context.Context, bsoncore.Document) error {
	t.w.inserted++
	return nil
}

func (countingTarget) Replace(context.Context, bsoncore.Document) error {
	return errors.New("nothing to replace")
}
