package storage

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkGCPause is what a GC holds the writers for, by the size of the
// live data: each iteration first rewrites a tenth of the documents over
// ten checkpoints (the garbage), then collects. The figure is
// ms-paused/op, timed around each GC alone.
func BenchmarkGCPause(b *testing.B) {
	for _, live := range []int32{20_000, 200_000, 2_000_000} {
		b.Run(fmt.Sprintf("docs=%d", live), func(b *testing.B) {
			d := openDatabase(b, Options{CheckpointInterval: time.Hour})
			pad := string(make([]byte, 60))
			write := func(from, n int32, v string) {
				mustWrite(b, d, func(tx *Tx) error {
					if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
						return err
					}
					for i := from; i < from+n; i++ {
						if err := tx.Replace(ctx, "c", doc(i%live, v+pad)); err != nil {
							return err
						}
					}
					return nil
				})
			}
			write(0, live, "")
			var before, after int64
			var paused time.Duration
			for i := range b.N {
				b.StopTimer()
				for k := range int32(10) {
					write(int32(i)*live/10+k*live/100, live/100, fmt.Sprint(i))
					if err := d.Checkpoint(ctx); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				var err error
				start := time.Now()
				if before, after, err = d.GC(ctx); err != nil {
					b.Fatal(err)
				}
				paused += time.Since(start)
			}
			b.ReportMetric(float64(paused.Milliseconds())/float64(b.N), "ms-paused/op")
			b.ReportMetric(float64(after)/1e6, "MB-after")
			b.ReportMetric(float64(before)/1e6, "MB-before")
		})
	}
}
