package storage

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// BenchmarkInsertManyPastTheBudget inserts batches of 1,000 small
// documents, as insertMany does, into a database whose edit budget the
// run passes many times, and reports the batches' latency, the share of
// the time the slow ones took, and the peak of the edits against the
// budget: the budget's checkpoints are what slow batches wait for.
func BenchmarkInsertManyPastTheBudget(b *testing.B) {
	e, err := Open(b.TempDir(), Options{CacheBytes: 32 << 20, CheckpointInterval: time.Hour}, zerolog.New(io.Discard))
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	pad := string(make([]byte, 60))
	var took []time.Duration
	var peak int64
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		err := d.Write(ctx, func(tx *Tx) error {
			if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
				return err
			}
			for j := 0; j < 1000; j++ {
				if err := tx.Insert(ctx, "c", doc(int32(i*1000+j), pad)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(t0))
		peak = max(peak, e.editBytes.Load())
	}
	elapsed := time.Since(start)
	slices.Sort(took)
	b.ReportMetric(float64(b.N*1000)/elapsed.Seconds(), "docs/s")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(took[len(took)-1].Microseconds()), "max-µs")
	// The share of the time the slow batches (over 3 times the median)
	// took: how much of a write load stalls behind checkpoints.
	var slow time.Duration
	median := took[len(took)/2]
	for _, t := range took {
		if t > 3*median {
			slow += t
		}
	}
	b.ReportMetric(100*slow.Seconds()/elapsed.Seconds(), "%slow")
	b.ReportMetric(float64(median.Microseconds()), "median-µs")
	b.ReportMetric(float64(peak)/float64(e.opts.CacheBytes), "peak-edits/budget")
}
