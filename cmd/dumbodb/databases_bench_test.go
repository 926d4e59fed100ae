package main

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// thousandDatabases is how many databases BenchmarkThousandDatabases
// creates.
const thousandDatabases = 1000

// BenchmarkThousandDatabases measures what databases cost a real server
// started on an empty data directory: 1,000 databases
// created by one insert each, one after the other on one connection
// (create-ms is the mean per database, create-p50-ms the median);
// listDatabases; the server's RSS and the data directory's size; then
// kill -9, the time until the restarted server answers, and its first
// listDatabases. docs/design/resources.md has the figures. Run it once:
//
//	go test -run XXX -bench ThousandDatabases -benchtime=1x ./cmd/dumbodb/
func BenchmarkThousandDatabases(b *testing.B) {
	dumboproc.Binary(b) // built before any clock starts
	for range b.N {
		thousandDatabasesOnce(b)
	}
	b.ReportMetric(0, "ns/op")
}

func thousandDatabasesOnce(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	p := dumboproc.StartT(b, dir)
	c := connect(b, p)
	took := make([]time.Duration, 0, thousandDatabases)
	for i := range thousandDatabases {
		start := time.Now()
		if _, err := c.Database(fmt.Sprint("db", i)).Collection("c").InsertOne(ctx, bson.M{"_id": i}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	var sum time.Duration
	for _, d := range took {
		sum += d
	}
	slices.Sort(took)
	b.ReportMetric(ms(sum)/thousandDatabases, "create-ms")
	b.ReportMetric(ms(took[len(took)/2]), "create-p50-ms")
	b.ReportMetric(ms(timeListDatabases(b, c)), "list-ms")
	b.ReportMetric(float64(rssBytes(b, p.Pid())>>20), "rss-MB")
	b.ReportMetric(float64(diskUsage(b, dir)>>20), "disk-MB")

	c.Disconnect(ctx)
	p.StopT(b, syscall.SIGKILL)
	start := time.Now()
	p = dumboproc.StartT(b, dir)
	b.ReportMetric(time.Since(start).Seconds(), "restart-s")
	c = connect(b, p)
	b.ReportMetric(ms(timeListDatabases(b, c)), "relist-ms")
	c.Disconnect(ctx)
	p.StopT(b, syscall.SIGTERM)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func connect(b *testing.B, p *dumboproc.Proc) *mongo.Client {
	b.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(p.URL()))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// timeListDatabases runs listDatabases, sizes included, and checks that
// it lists every database.
func timeListDatabases(b *testing.B, c *mongo.Client) time.Duration {
	b.Helper()
	start := time.Now()
	res, err := c.ListDatabases(context.Background(), bson.M{})
	took := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Databases) < thousandDatabases {
		b.Fatalf("listDatabases lists %d databases, want %d", len(res.Databases), thousandDatabases)
	}
	return took
}

// diskUsage is what the files under dir occupy (allocated blocks).
func diskUsage(b *testing.B, dir string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Sys().(*syscall.Stat_t).Blocks * 512
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
