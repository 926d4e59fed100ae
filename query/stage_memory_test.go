package query

import (
	"context"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// TestResultTooLarge: a pipeline may build a document over 16 MiB (a
// $facet of 20 MiB here) as long as it does not return it, as on mongod.
func TestResultTooLarge(t *testing.T) {
	docs := numbered(20, 20, strings.Repeat("x", 1<<20))
	ctx := context.Background()
	err := runUntil(ctx, t, `[{"$facet": {"all": []}}]`, PipelineOptions{}, NewSliceStream(docs))
	wantCode(t, err, mongoerr.BSONObjectTooLarge)
	p, err := CompilePipeline(mustValue(t, `[{"$facet": {"all": []}}, {"$project": {"n": {"$size": "$all"}}}]`).Data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Drain(ctx, p.Run(NewSliceStream(docs)))
	if err != nil || len(out) != 1 || typedDoc(out[0]) != "{n: 20}" {
		t.Fatalf("got %v, %v", out, err)
	}
}

// spillingRun runs a $sort, then stages, over enough documents to spill
// several runs.
func spillingRun(t *testing.T, stages string) *RunningPipeline {
	t.Helper()
	p, err := CompilePipelineOpts(mustValue(t, `[{"$sort": {"k": -1}}`+stages+`]`).Data,
		PipelineOptions{AllowDiskUse: true, MemoryLimit: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return p.Run(NewSliceStream(numbered(5000, 7, "padding")))
}

func openSpills(rp *RunningPipeline) int {
	rp.spills.mu.Lock()
	defer rp.spills.mu.Unlock()
	return len(rp.spills.files)
}

// TestSpillsReleased: the spill files of a pipeline are closed when its
// stream ends, at its end or on an error, and when it is closed midway.
func TestSpillsReleased(t *testing.T) {
	ctx := context.Background()
	t.Run("end", func(t *testing.T) {
		rp := spillingRun(t, "")
		if _, err := Drain(ctx, rp); err != nil {
			t.Fatal(err)
		}
		if n := openSpills(rp); n != 0 {
			t.Errorf("%d spill files open after the end", n)
		}
	})
	t.Run("error", func(t *testing.T) {
		// k = 0 sorts last: the error comes once the merge is under way.
		rp := spillingRun(t, `, {"$project": {"x": {"$divide": [1, "$k"]}}}`)
		if _, err := rp.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if openSpills(rp) == 0 {
			t.Fatal("nothing spilled: the test proves nothing")
		}
		if _, err := Drain(ctx, rp); err == nil {
			t.Fatal("no division by zero")
		}
		if n := openSpills(rp); n != 0 {
			t.Errorf("%d spill files open after the error", n)
		}
	})
	t.Run("closed midway", func(t *testing.T) {
		rp := spillingRun(t, "")
		if _, err := rp.Next(ctx); err != nil {
			t.Fatal(err)
		}
		if openSpills(rp) == 0 {
			t.Fatal("nothing spilled: the test proves nothing")
		}
		if err := rp.Close(); err != nil {
			t.Fatal(err)
		}
		if n := openSpills(rp); n != 0 {
			t.Errorf("%d spill files open after Close", n)
		}
	})
}

// TestSpilledSubPipelinesReleased: the spills of sub-pipelines belong to
// the top-level pipeline: a $lookup whose sub-pipeline fails midway
// through merging its spilled sort leaves no file open.
func TestSpilledSubPipelinesReleased(t *testing.T) {
	p, err := CompilePipelineOpts(mustValue(t, `[{"$lookup": {"from": "f", "as": "m", "pipeline": [
		{"$sort": {"k": -1}}, {"$project": {"x": {"$divide": [1, "$k"]}}}, {"$match": {"x": {"$lt": 0}}}]}}]`).Data,
		PipelineOptions{AllowDiskUse: true, MemoryLimit: 16 << 10, Catalog: memCatalog{"f": numbered(3000, 7, "padding")}})
	if err != nil {
		t.Fatal(err)
	}
	rp := p.Run(NewSliceStream(numbered(1, 1, "")))
	_, err = Drain(context.Background(), rp)
	if err == nil || !strings.Contains(err.Error(), "divide by zero") {
		t.Fatalf("got %v, want a division by zero", err)
	}
	if n := openSpills(rp); n != 0 {
		t.Errorf("%d spill files open after the error", n)
	}
}
