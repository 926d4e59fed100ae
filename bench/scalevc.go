package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// The Scale family's version-control steps (DumboDB) and disk figures.
// The 1 % changes set note in the orders of one slice, seq mod 100: slice
// 0 for the commit, 1 on branch side, 2 on main before the merge; the
// values are their own, so every update is a real change.

const scaleBranch = "side"

// commitAll commits the working set as the steps before left it: the
// loaded orders, their indexes, the updates.
func commitAll(_ context.Context, _ *Env, d *scaleData) (*Workload, error) {
	return &Workload{Call: func(ctx context.Context, c int64) error {
		if err := d.commit(ctx, c); err != nil {
			return err
		}
		d.committed = true
		return nil
	}}, nil
}

func (d *scaleData) commit(ctx context.Context, c int64) error {
	return d.db.RunCommand(ctx, commitCmd(c)).Err()
}

// ensureCommitted commits the working set, untimed, when VC/Commit/All
// did not.
func (d *scaleData) ensureCommitted(ctx context.Context) error {
	if d.committed {
		return nil
	}
	if err := d.commit(ctx, 0); err != nil {
		return unsupported("dumboCommit", err)
	}
	d.committed = true
	return nil
}

// commitOnePercent times the commit of a 1 % change made untimed.
func commitOnePercent(ctx context.Context, _ *Env, d *scaleData) (*Workload, error) {
	if err := d.ensureCommitted(ctx); err != nil {
		return nil, err
	}
	if err := changeOnePercent(ctx, d.coll, d.n, 0, "committed"); err != nil {
		return nil, err
	}
	return &Workload{Call: func(ctx context.Context, c int64) error { return d.commit(ctx, c) }}, nil
}

// ensureBranched makes branch side from main's head and commits a 1 %
// change on it (untimed).
func (d *scaleData) ensureBranched(ctx context.Context) error {
	if err := d.ensureCommitted(ctx); err != nil || d.branched {
		return err
	}
	if err := d.db.RunCommand(ctx, kvs("dumboBranch", 1, "branch", scaleBranch)).Err(); err != nil {
		return err
	}
	side := d.db.Client().Database(d.db.Name() + "@" + scaleBranch)
	if err := changeOnePercent(ctx, side.Collection(d.coll.Name()), d.n, 1, "on "+scaleBranch); err != nil {
		return err
	}
	if err := side.RunCommand(ctx, commitCmd(0)).Err(); err != nil {
		return err
	}
	d.branched = true
	return nil
}

// diffBranches times the diff of main and side, which differ in 1 % of
// the orders.
func diffBranches(ctx context.Context, _ *Env, d *scaleData) (*Workload, error) {
	if err := d.ensureBranched(ctx); err != nil {
		return nil, err
	}
	return &Workload{Call: func(ctx context.Context, _ int64) error {
		raw, err := d.db.RunCommand(ctx, kvs("dumboDiff", 1, "from", "main", "to", scaleBranch)).Raw()
		if err != nil {
			return err
		}
		return expectCount("dumboDiff", modifiedIn(raw, d.coll.Name()), d.n/100)
	}}, nil
}

// modifiedIn counts the modified documents a dumboDiff reply lists for
// collection coll.
func modifiedIn(reply bson.Raw, coll string) int {
	colls, _ := reply.Lookup("collections").ArrayOK()
	vals, _ := colls.Values()
	for _, v := range vals {
		doc, ok := v.DocumentOK()
		if !ok || doc.Lookup("name").StringValue() != coll {
			continue
		}
		mod, _ := doc.Lookup("modified").ArrayOK()
		docs, _ := mod.Values()
		return len(docs)
	}
	return 0
}

// mergeBranches commits another 1 % change on main, untimed, then times
// merging side into it: a three-way merge, each side bringing its own.
func mergeBranches(ctx context.Context, _ *Env, d *scaleData) (*Workload, error) {
	if err := d.ensureBranched(ctx); err != nil {
		return nil, err
	}
	if err := changeOnePercent(ctx, d.coll, d.n, 2, "on main"); err != nil {
		return nil, err
	}
	if err := d.commit(ctx, 0); err != nil {
		return nil, err
	}
	return &Workload{Call: func(ctx context.Context, _ int64) error {
		var res struct {
			FastForward bool `bson:"fastForward"`
			UpToDate    bool `bson:"upToDate"`
		}
		if err := d.db.RunCommand(ctx, kvs("dumboMerge", 1, "mergeIn", scaleBranch)).Decode(&res); err != nil {
			return err
		}
		if res.FastForward || res.UpToDate {
			return fmt.Errorf("dumboMerge: fast-forward %v, up to date %v; want a three-way merge", res.FastForward, res.UpToDate)
		}
		return nil
	}}, nil
}

// diskBytes measures what the load and the steps after it added to the
// data directory, after a checkpoint: the orders, their indexes and, on
// DumboDB, the commits of the steps before.
func diskBytes(_ context.Context, e *Env, d *scaleData) (*Workload, error) {
	return diskMeasure(e, d, func(bytes int64) float64 { return float64(bytes) })
}

// diskRatio divides the same by the orders' BSON size as loaded.
func diskRatio(_ context.Context, e *Env, d *scaleData) (*Workload, error) {
	return diskMeasure(e, d, func(bytes int64) float64 { return float64(bytes) / float64(d.bsonBytes) })
}

func diskMeasure(e *Env, d *scaleData, figure func(int64) float64) (*Workload, error) {
	if e.DataDir == "" {
		return nil, errNotApplicable{"data directory unknown (--start or --data-dir)"}
	}
	return &Workload{Measure: func(ctx context.Context) (float64, error) {
		if err := checkpoint(ctx, e); err != nil {
			return 0, err
		}
		bytes, err := liveBytes(e.DataDir)
		return figure(bytes - d.dirBefore), err
	}}, nil
}

// liveBytes sums dirBytes over the data directory's entries but those
// whose names start with a dot: DumboDB's own (spare databases made
// ahead, dropped ones kept for dumboUndrop), which hold no live data.
func liveBytes(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	var total int64
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".") {
			continue
		}
		n, err := dirBytes(filepath.Join(dir, en.Name()))
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
