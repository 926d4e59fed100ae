package storage

import (
	"context"
	"sync/atomic"
	"time"
)

// A deletion since the last checkpoint is a tombstone in the edit overlay,
// and a scan of a key range steps over each tombstone in it (and over the
// base entry it hides) until a checkpoint folds them away. A workload that
// deletes from the front of a collection and scans from there (a queue, a
// sliding window kept by deleteMany {_id: {$lt: cutoff}}) then pays for
// every deletion since the checkpoint on every scan: in dumbobench's Soak
// that was 55% of the server's CPU. So scans report the tombstones they
// step over, and once those outweigh what folding the edits costs, the
// database checkpoints early (the idea of RocksDB's deletion-triggered
// compaction). A checkpoint costs what it folds, so the early ones cost
// less than the scans they spare.

// tombstoneFlush is how many tombstones a scan steps over before it adds
// them to its database's count: an atomic add per 256, not per step. A
// scan that ends with fewer uncounted drops them; only long runs matter.
const tombstoneFlush = 256

// tombstoneFoldMin is the fewest tombstones stepped over since the last
// checkpoint that start one early: about 6 ms of scanning at the 156-208
// ns a step that BenchmarkScanOverTombstones measured, which covers a
// checkpoint's fixed cost (its root and manifest writes and syncs).
const tombstoneFoldMin = 1 << 15

// tombstoneFoldBytes is about how many bytes of edits a checkpoint folds
// in the time a scan steps over one tombstone: BenchmarkCheckpointTombstones
// folded 128-byte tombstones at 720 ns each (a step's time for 32-40
// bytes), BenchmarkCheckpoint100K 196-byte inserts at 1.8 µs (22-29
// bytes). An early checkpoint starts only once the tombstones stepped
// over, times this, pass the edits the branches hold: then the scans
// have already cost what the fold will (the rent-or-buy rule), and a
// database holding a large budget of edits is not folded for a few scans.
const tombstoneFoldBytes = 32

// tombstoneFoldEvery is the shortest time between two early checkpoints
// of a database. Each checkpoint writes new tree nodes, and the ones they
// replace stay in the table files until a GC: checkpoints every third of
// a second, as the rules above alone made them in dumbobench's Soak, grew
// its table files by 10 MB a minute and Dolt's in-memory table indexes
// with them (RSS 137 MB/hour, before automatic GC, autogc.go). At most
// one each interval slows that growth (19.3 MB/hour in the same soak),
// at the price of scans that step over up to the interval's deletions.
// With automatic GC, 1 second gave 18% more operations but 27.8 MB/hour
// against 8.46 (docs/design/durability.md).
const tombstoneFoldEvery = 5 * time.Second

// tombstoneMeter counts a database's tombstones stepped over by scans
// since its last checkpoint.
type tombstoneMeter struct {
	skipped atomic.Int64
	// last is when the last early checkpoint was asked for (UnixNano),
	// every the shortest time to the next (tombstoneFoldEvery).
	last  atomic.Int64
	every time.Duration
	// due decides whether skipped tombstones warrant a checkpoint and
	// starts it; it reports whether it did.
	due func(skipped int64) bool
}

// add counts n more tombstones stepped over. The adder that claims a
// count past the minimum (the swap to zero) asks due, and gives the count
// back when due declines.
func (m *tombstoneMeter) add(n int) {
	total := m.skipped.Add(int64(n))
	if total < tombstoneFoldMin || m.due == nil || !m.skipped.CompareAndSwap(total, 0) {
		return
	}
	if !m.due(total) {
		m.skipped.Add(total)
	}
}

// reset starts the count again as a checkpoint publishes its fold (every
// kind: the periodic, the budget's, GC's and version control's): the
// tombstones stepped over until then are folded away.
func (m *tombstoneMeter) reset() { m.skipped.Store(0) }

// tombstoneCount is one scan's uncounted tombstones and the meter they go
// to (nil: a scan nobody meters, such as an index build's).
type tombstoneCount struct {
	meter *tombstoneMeter
	n     int
}

// step counts one tombstone stepped over.
func (c *tombstoneCount) step() {
	if c.meter == nil {
		return
	}
	if c.n++; c.n == tombstoneFlush {
		c.meter.add(c.n)
		c.n = 0
	}
}

// tombstonesDue is d's meter's due: it starts a checkpoint when the
// tombstones stepped over outweigh folding the edits the branches hold.
func (d *Database) tombstonesDue(skipped int64) bool {
	now := time.Now().UnixNano()
	if now-d.tombstones.last.Load() < int64(d.tombstones.every) {
		return false
	}
	var held int64
	for _, b := range d.branchList() {
		held += b.state.Load().editBytes()
	}
	if skipped*tombstoneFoldBytes < held {
		return false
	}
	d.tombstones.last.Store(now)
	d.engine.dbStats.deletionCheckpoints.Add(1)
	d.checkpointSoon(context.Background())
	return true
}
