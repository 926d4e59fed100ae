package storage

import (
	"context"
	"os"
	"time"
)

// Automatic GC (docs/design/durability.md, "Automatic GC"). Each
// checkpoint leaves the nodes it replaced in the table files, and Dolt
// indexes every chunk of those files in memory, so a database whose data
// does not grow would grow on disk and in memory until someone ran
// compact. After each checkpoint a database therefore collects its store
// once it has grown by at least AutoGCMinBytes and by at least its size
// after the last GC, as long as it is at most AutoGCMaxBytes: a GC holds
// the writers for 0.18 µs per document it keeps, 3 to 7 ms per MB of
// the store as the data compresses less or more (BenchmarkGCPause).

// Automatic GC defaults. The least growth is small because what a store
// keeps in memory between GCs grows with what it wrote: Dolt indexes
// every chunk. In a 30-minute soak, at 16 MiB the live heap's mean rose
// from 13.2 MB (minutes 6-15) to 13.5 (20-30), GCs 8 to 11 minutes
// apart; at 4 MiB it was 13.0 and 13.1, and no GC of a store that small
// held the writers for 100 ms (docs/design/resources.md, "Growth over
// time").
const (
	DefaultAutoGCMaxBytes = 128 << 20
	DefaultAutoGCMinBytes = 4 << 20
)

// autoGCDue reports whether a store now of size bytes should be collected.
// The first call for the database since the engine opened only notes
// the size.
func (d *Database) autoGCDue(size int64) bool {
	if d.gcBase.CompareAndSwap(0, size) {
		return false
	}
	grown := size - d.gcBase.Load()
	o := d.engine.opts
	return size <= o.AutoGCMaxBytes && grown >= o.AutoGCMinBytes && grown >= size-grown
}

// collectSoon starts d's automatic GC in the background when it is due
// and no other database's is running. Called at the end of a checkpoint,
// whose lock the GC then waits for.
func (d *Database) collectSoon() {
	if d.engine.opts.AutoGCMaxBytes <= 0 || !d.autoGCDue(d.storeSize()) {
		return
	}
	select {
	case d.engine.autoGC <- struct{}{}:
	default:
		return // another database's runs: the next checkpoint asks again
	}
	go func() {
		defer func() { <-d.engine.autoGC }()
		d.engine.inGate(func() { d.engine.guard(d, "automatic GC", d.autoCollect) })
	}()
}

// autoCollect is the automatic GC of an open database: one closed for
// idleness meanwhile is left closed.
func (d *Database) autoCollect() error {
	if !d.holdIfOpen() {
		return nil
	}
	defer d.release()
	// An index build ahead under way would hold the writers, which the GC
	// holds, for the rest of its build: the next checkpoint asks again.
	if !d.pins.building.TryLock() {
		return nil
	}
	defer d.pins.building.Unlock()
	start := time.Now()
	before, after, err := d.collect(context.Background()) // closing d cancels it
	if err != nil {
		// The next try waits for another doubling: on a disk with room for
		// checkpoints but not for a GC's copy of the live data, trying at
		// each checkpoint would hold the writers for the copy each time.
		d.gcBase.Store(max(d.storeSize(), 1))
		return err
	}
	d.engine.dbStats.autoCollected(max(before-after, 0))
	d.log.Info().Str("c", "STORAGE").Str("db", d.name).Int64("before", before).Int64("after", after).
		Dur("took", time.Since(start)).Msg("automatic GC")
	return nil
}

// storeSize is the size of d's chunk store: its table files and journal,
// not its log, which checkpoints recycle.
func (d *Database) storeSize() int64 {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return 0
	}
	var total int64
	for _, e := range entries {
		if !e.Type().IsRegular() || !(isTableFileName(e.Name()) || e.Name() == doltJournalName) {
			continue
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
	}
	return total
}
