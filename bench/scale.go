package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The Scale family measures what operations cost on a collection of
// realistic size: orders of about 190 bytes (scaledocs.go), N of them for
// each size of Config.Scales. Loading a million documents takes tens of
// seconds, so each target loads a size once, and every step at that size
// works on the same collection: the steps run in the order they are
// listed, those that add indexes after those that must scan, those that
// change documents change a field no later step reads. After the last
// step that runs on a target its database is dropped.

// scaleSize is the Scale family at one size: its steps and, by target
// URL, the collection they share. Only one target's steps run at a time
// (prepare and the rounds go target by target), so the map needs no lock.
type scaleSize struct {
	n      int
	steps  []Benchmark
	loaded map[string]*scaleData
}

// scaleData is one target's loaded collection.
type scaleData struct {
	n    int
	db   *mongo.Database
	coll *mongo.Collection
	// bsonBytes is the BSON size of the documents as loaded; dirBefore
	// the live size of the data directory before (liveBytes; 0 when it
	// is unknown).
	bsonBytes, dirBefore int64
	// committed and branched record the version-control steps' state
	// (DumboDB), so that a step whose predecessors were filtered out
	// makes it first.
	committed, branched bool
}

func scaleBenchmarks(sizes []int) []Benchmark {
	var bs []Benchmark
	for _, n := range sizes {
		s := &scaleSize{n: n, loaded: map[string]*scaleData{}}
		bs = append(bs, s.benchmarks()...)
	}
	return bs
}

// benchmarks lists the size's steps in the order they must run.
func (s *scaleSize) benchmarks() []Benchmark {
	n := s.n
	s.steps = []Benchmark{
		{Name: "Load", Unit: "doc", PerCall: n, Once: true, Setup: s.load},
		{Name: "BulkLoad", Unit: "doc", PerCall: n, Once: true, DumboOnly: true, Setup: s.bulkLoad},
		{Name: "Count/Unindexed", Unit: "op", Long: true, Setup: s.with(countUnindexed)},
		{Name: "Find/Unindexed", Unit: "op", Long: true, Setup: s.with(findUnindexed)},
		{Name: "Aggregate/GroupStatus", Unit: "op", Long: true, Setup: s.with(groupByStatus)},
		{Name: "Sort/Unindexed/Limit10", Unit: "op", Long: true, Setup: s.with(sortUnindexed)},
	}
	for i, ix := range scaleIndexes {
		s.steps = append(s.steps, Benchmark{Name: "CreateIndex/" + ix.name, Unit: "op", Once: true, Setup: s.with(createScaleIndex(i))})
	}
	s.steps = append(s.steps,
		Benchmark{Name: "Find/Indexed/Eq/1", Unit: "op", Long: true, Setup: s.with(indexed(findSeq))},
		Benchmark{Name: "Find/Indexed/Eq/100", Unit: "op", Long: true, Setup: s.with(indexed(findCustomer))},
		Benchmark{Name: "Find/Indexed/Range/100", Unit: "op", Long: true, Setup: s.with(indexed(findSeqRange(100)))},
		Benchmark{Name: "Find/Indexed/Range/10K", Unit: "op", Long: true, Setup: s.with(indexed(findSeqRange(10000)))},
		Benchmark{Name: "Find/Covered", Unit: "op", Long: true, Setup: s.with(indexed(findCovered))},
		Benchmark{Name: "UpdateMany/1pct", Unit: "doc", PerCall: n / 100, Long: true, Setup: s.with(updateOnePercent)},
		Benchmark{Name: "VC/Commit/All", Unit: "op", Once: true, DumboOnly: true, Setup: s.with(commitAll)},
		Benchmark{Name: "VC/Commit/1pct", Unit: "op", Once: true, DumboOnly: true, Setup: s.with(commitOnePercent)},
		Benchmark{Name: "VC/Diff/1pct", Unit: "op", Long: true, DumboOnly: true, Setup: s.with(diffBranches)},
		Benchmark{Name: "VC/Merge/1pct", Unit: "op", Once: true, DumboOnly: true, Setup: s.with(mergeBranches)},
		Benchmark{Name: "Disk/Bytes", Unit: "B", Quantity: true, Setup: s.with(diskBytes)},
		Benchmark{Name: "Disk/RatioToBSON", Unit: "× BSON", Quantity: true, Setup: s.with(diskRatio)},
		Benchmark{Name: "Restart/Clean", Unit: "op", Long: true, DumboOnly: true, Setup: s.with(restartClean)},
		Benchmark{Name: "Restart/Kill9", Unit: "op", Long: true, DumboOnly: true, Setup: s.with(restartKill9)},
	)
	for i := range s.steps {
		b := &s.steps[i]
		b.Name = "Scale/" + ScaleLabel(n) + "/" + b.Name
		b.Group, b.Asked = GroupScale, true
		if b.Unit != "× BSON" { // a ratio per document means nothing
			b.Docs = n
		}
		if b.Long {
			b.Setup = limitCalls(b.Setup)
		}
		b.Setup = s.releasing(b.Name, b.Setup)
	}
	return s.steps
}

// scaleCallLimit is how long a call of a repeated step may take: a server
// whose queries scan at 100 µs a document needs minutes at a million, and
// one that spends a quarter of a second on each document an updateMany
// updates (FerretDB at 20K documents) would need most of an hour for 1 %
// of a million. Steps that run once (loads, index builds, commits) have
// no limit: the steps after them need what they make.
const scaleCallLimit = 5 * time.Minute

// limitCalls gives up a call after scaleCallLimit (the driver closes its
// connection), which fails the step on that target.
func limitCalls(setup func(context.Context, *Env) (*Workload, error)) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		w, err := setup(ctx, e)
		if err != nil {
			return nil, err
		}
		call := w.Call
		w.Call = func(ctx context.Context, c int64) error {
			ctx, cancel := context.WithTimeout(ctx, scaleCallLimit)
			defer cancel()
			err := call(ctx, c)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("gave up after %s: %w", scaleCallLimit, err)
			}
			return err
		}
		return w, nil
	}
}

// with gives a step the target's loaded collection, loading it (untimed)
// when no Load step ran before on this target.
func (s *scaleSize) with(setup func(context.Context, *Env, *scaleData) (*Workload, error)) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		d := s.loaded[e.URL]
		if d == nil {
			var err error
			if d, err = s.loadNow(ctx, e); err != nil {
				return nil, err
			}
		}
		return setup(ctx, e, d)
	}
}

// releasing drops the size's database after the last of its steps that
// runs on the target, whether that step worked or not.
func (s *scaleSize) releasing(name string, setup func(context.Context, *Env) (*Workload, error)) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		w, err := setup(ctx, e)
		if s.lastOn(e.Cfg, e.Dumbo) != name {
			return w, err
		}
		if err != nil {
			s.release(ctx, e)
			return nil, err
		}
		closeStep := w.Close
		w.Close = func() {
			if closeStep != nil {
				closeStep()
			}
			s.release(context.Background(), e)
		}
		return w, nil
	}
}

// lastOn names the last of the size's steps that the run includes on a
// target (DumboOnly steps run on DumboDB only).
func (s *scaleSize) lastOn(cfg *Config, dumbo bool) string {
	last := ""
	for _, b := range s.steps {
		if cfg.Selected(b) && (dumbo || !b.DumboOnly) {
			last = b.Name
		}
	}
	return last
}

func (s *scaleSize) release(ctx context.Context, e *Env) {
	s.database(e).Drop(ctx)
	delete(s.loaded, e.URL)
}

// database is the size's database on a target, apart from the one
// prepare drops before every benchmark.
func (s *scaleSize) database(e *Env) *mongo.Database {
	return e.Client.Database("dumbobench_scale_" + ScaleLabel(s.n))
}

// ScaleLabel names a size as --scale does: 1M, 100K, 2500.
func ScaleLabel(n int) string {
	switch {
	case n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n%1000 == 0:
		return strconv.Itoa(n/1000) + "K"
	default:
		return strconv.Itoa(n)
	}
}

// minScale is the smallest size: the steps need a hundred documents per
// customer and their 1 % to be whole.
const minScale = 1000

// ParseScales reads --scale: sizes separated by commas, each a whole
// number with an optional K (thousand) or M (million), a multiple of 100
// and at least 1K.
func ParseScales(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := parseScale(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if slices.Contains(sizes, n) {
			return nil, fmt.Errorf("size %s given twice", ScaleLabel(n))
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

func parseScale(f string) (int, error) {
	mult := 1
	digits := f
	switch {
	case strings.HasSuffix(strings.ToUpper(f), "K"):
		mult, digits = 1000, f[:len(f)-1]
	case strings.HasSuffix(strings.ToUpper(f), "M"):
		mult, digits = 1_000_000, f[:len(f)-1]
	}
	v, err := strconv.Atoi(digits)
	if err != nil || v <= 0 || v > math.MaxInt/mult {
		return 0, fmt.Errorf("size %q: want a number of documents such as 100K or 1M", f)
	}
	n := v * mult
	if n < minScale || n%100 != 0 {
		return 0, fmt.Errorf("size %q: want a multiple of 100 documents of at least 1K", f)
	}
	return n, nil
}
