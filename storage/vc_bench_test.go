package storage

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// seedCommitted makes a database whose main holds n committed documents.
func seedCommitted(b *testing.B, n int) *Database {
	e, err := Open(b.TempDir(), Options{CacheBytes: 1 << 30}, discardLog())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	d, _ := e.Database(ctx, "db", true)
	err = d.Write(ctx, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, "c"); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := tx.Insert(ctx, "c", docKV(int32(i), "v", 0, "pad", "0123456789012345678901234567890123456789")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "seed"}); err != nil {
		b.Fatal(err)
	}
	return d
}

func vcSizes(b *testing.B, fn func(b *testing.B, n int)) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("%dK", n/1000), func(b *testing.B) { fn(b, n) })
	}
}

// BenchmarkVCCommitOneChange: change one document, commit.
func BenchmarkVCCommitOneChange(b *testing.B) {
	vcSizes(b, func(b *testing.B, n int) {
		d := seedCommitted(b, n)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			put(b, d, "main", docKV(int32(i%n), "v", i+1))
			if _, err := d.Commit(ctx, "main", CommitOptions{Message: "one"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVCBranch: create a branch.
func BenchmarkVCBranch(b *testing.B) {
	vcSizes(b, func(b *testing.B, n int) {
		d := seedCommitted(b, n)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := d.CreateBranch(ctx, fmt.Sprintf("b%d", i), Revision{Branch: "main"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVCDiff10: diff two commits that differ in 10 documents.
func BenchmarkVCDiff10(b *testing.B) {
	vcSizes(b, func(b *testing.B, n int) {
		d := seedCommitted(b, n)
		from, _ := d.Resolve(ctx, "main", "main")
		fromC, _ := d.revisionCommit(ctx, from)
		for i := 0; i < 10; i++ {
			put(b, d, "main", docKV(int32(i*97%n), "v", 7))
		}
		d.Commit(ctx, "main", CommitOptions{Message: "ten"})
		a, to := Revision{Commit: fromC.Addr()}, Revision{Branch: "main"}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			diffs, err := d.Diff(ctx, DiffSide{Rev: a}, DiffSide{Rev: to}, "")
			if err != nil || len(diffs[0].Modified) != 10 {
				b.Fatalf("%v %v", diffs, err)
			}
		}
	})
}

// BenchmarkVCMerge10x10: merge two branches with 10 changes each (timed:
// the merge only).
func BenchmarkVCMerge10x10(b *testing.B) {
	vcSizes(b, func(b *testing.B, n int) {
		d := seedCommitted(b, n)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			side := fmt.Sprintf("side%d", i)
			d.CreateBranch(ctx, side, Revision{Branch: "main"})
			for j := 0; j < 10; j++ {
				put(b, d, side, docKV(int32((i*20+j)*13%n), "v", -1))
				put(b, d, "main", docKV(int32((i*20+j+10)*13%n), "v", -2))
			}
			d.Commit(ctx, side, CommitOptions{Message: "side"})
			d.Commit(ctx, "main", CommitOptions{Message: "main"})
			b.StartTimer()
			if _, err := d.Merge(ctx, "main", Revision{Branch: side}, MergeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkVCBytesPerCommit1MB: 100 commits that each change one field of
// one 1 MB document; reports the bytes each commit adds on disk.
func BenchmarkVCBytesPerCommit1MB(b *testing.B) {
	for i := 0; i < b.N; i++ {
		e, _ := Open(b.TempDir(), Options{}, discardLog())
		d, _ := e.Database(ctx, "db", true)
		big := string(make([]byte, 1<<20))
		mk := func(v int) bsoncore.Document {
			return bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendInt32("counter", int32(v)).AppendString("blob", big).Build()
		}
		put(b, d, "main", mk(0))
		d.Commit(ctx, "main", CommitOptions{Message: "big"})
		d.GC(ctx)
		start := e.SizeOnDisk("db")
		for c := 1; c <= 100; c++ {
			put(b, d, "main", mk(c))
			d.Commit(ctx, "main", CommitOptions{Message: "bump"})
		}
		d.GC(ctx)
		b.ReportMetric(float64(e.SizeOnDisk("db")-start)/100, "bytes/commit")
		e.Close()
	}
}
