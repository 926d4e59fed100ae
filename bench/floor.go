package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.mongodb.org/mongo-driver/v2/bson"
	"golang.org/x/sys/unix"
)

// floorFileSize is the preallocated floor file: appends wrap around in it,
// so the file never grows and fdatasync flushes data, not metadata.
const floorFileSize = 16 << 20

func floorBenchmarks() []Benchmark {
	return append([]Benchmark{
		{Name: PingBenchmark, Group: GroupFloor, Unit: "op", Setup: setupPing},
		{Name: FloorBenchmark, Group: GroupFloor, Unit: "op", Machine: true, Setup: setupFdatasync},
	}, echoBenchmarks()...)
}

// setupPing measures a round trip through the driver and the server's
// command dispatch: no target can answer anything faster.
func setupPing(_ context.Context, e *Env) (*Workload, error) {
	admin := e.Client.Database("admin")
	return &Workload{Call: func(ctx context.Context, _ int64) error {
		return admin.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
	}}, nil
}

// setupFdatasync measures the cheapest durable write this disk allows: a
// 256-byte append made durable with fdatasync, in the out directory (the
// file system the servers' data directories usually share).
func setupFdatasync(_ context.Context, e *Env) (*Workload, error) {
	dir := e.Cfg.OutDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "floor-*.dat")
	if err != nil {
		return nil, fmt.Errorf("floor file: %w", err)
	}
	if err := preallocate(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("preallocate %s: %w", filepath.Base(f.Name()), err)
	}
	rec := make([]byte, 256)
	var off int64
	return &Workload{
		Call: func(_ context.Context, n int64) error {
			rec[0] = byte(n)
			if _, err := f.WriteAt(rec, off); err != nil {
				return err
			}
			off = (off + int64(len(rec))) % floorFileSize
			return unix.Fdatasync(int(f.Fd()))
		},
		Close: func() {
			f.Close()
			os.Remove(f.Name())
		},
	}, nil
}

// preallocate writes real zeros (not a sparse hole) and syncs them, so
// later writes overwrite allocated blocks.
func preallocate(f *os.File) error {
	zeros := make([]byte, 1<<20)
	for written := 0; written < floorFileSize; written += len(zeros) {
		if _, err := f.Write(zeros); err != nil {
			return err
		}
	}
	return f.Sync()
}
