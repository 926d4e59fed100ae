package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/dumbodb/dumbodb/storage/wal"
)

// Recovery of a database at open: every branch loaded from its last
// checkpoint, then the write-ahead log's records after it replayed, and
// the prepared transactions it left resolved by the decision log.

// recover loads every branch's checkpoint, replays the log after the
// oldest of them, and starts the log for new writes.
func (d *Database) recover(ctx context.Context) error {
	if d.engine.opts.journalStores {
		// As databases were made when stores had a journal: written at
		// once, so that the journal file tells their kind on reopening.
		if err := d.ensureBorn(ctx); err != nil {
			return err
		}
	}
	if _, err := d.branch(ctx, DefaultBranch); err != nil {
		return err
	}
	if err := d.loadAllBranches(ctx); err != nil {
		return err
	}
	var err error
	if d.retries, err = loadRetryTable(d.dir); err != nil {
		return err
	}
	if d.remotes, err = loadRemoteConfig(d.dir); err != nil {
		return err
	}
	walOpts := wal.Options{SegmentSize: d.engine.opts.WALSegmentSize, OnFailure: d.recoverIfOpen,
		OnDurable: d.flushChanges, OnSync: d.engine.logSynced}
	if d.wl, err = wal.Open(filepath.Join(d.dir, "wal"), walOpts, d.log); err != nil {
		return err
	}
	start := time.Now()
	oldest, newest := d.checkpointRange()
	n, err := d.wl.Replay(oldest, newest, func(lsn uint64, payload []byte) error { return d.redo(ctx, lsn, payload) })
	if err != nil {
		return fmt.Errorf("database %s: %w", d.name, err)
	}
	if n > 0 {
		d.log.Info().Str("c", "RECOVERY").Str("db", d.name).Int("records", n).Uint64("fromLSN", oldest).
			Dur("durationMillis", time.Since(start)).Msg("replayed the write-ahead log")
	}
	if err := d.wl.Start(); err != nil {
		return err
	}
	if err := d.resolvePrepared(ctx); err != nil {
		return err
	}
	d.flushChanges() // the events of replayed records the change log lacked
	for _, b := range d.branchList() {
		d.engine.addEditBytes(b.state.Load().editBytes())
	}
	d.startHistories()
	return nil
}

// loadAllBranches loads the state of every branch ref.
func (d *Database) loadAllBranches(ctx context.Context) error {
	names, err := d.branchNames(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if _, err := d.branch(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// checkpointRange is the lowest and highest log position any branch's
// checkpoint includes.
func (d *Database) checkpointRange() (oldest, newest uint64) {
	first := true
	for _, b := range d.branchList() {
		lsn := b.state.Load().lsn
		if first || lsn < oldest {
			oldest = lsn
		}
		newest = max(newest, lsn)
		first = false
	}
	return oldest, newest
}

func (d *Database) branchList() []*branch {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*branch, 0, len(d.branches))
	for _, b := range d.branches {
		out = append(out, b)
	}
	return out
}

// redo applies one replayed log record to its branch. A prepared record
// of a transaction over several databases waits for its commit mark (or,
// at the end of the log, its decision: resolvePrepared).
func (d *Database) redo(ctx context.Context, lsn uint64, payload []byte) error {
	rec, err := decodeRecord(payload)
	if err != nil {
		return err
	}
	switch rec.mark {
	case markPrepared:
		if d.prepared == nil {
			d.prepared = map[txnID]preparedRecord{}
		}
		d.prepared[rec.txn] = preparedRecord{lsn: lsn, rec: rec}
		return nil
	case markCommit:
		p, ok := d.prepared[rec.txn]
		delete(d.prepared, rec.txn)
		if !ok {
			return nil // the prepared record is in a checkpoint already
		}
		return d.apply(ctx, p.lsn, p.rec)
	case markAbort:
		delete(d.prepared, rec.txn)
		return nil
	}
	return d.apply(ctx, lsn, rec)
}

// preparedRecord is a prepared record replay keeps aside.
type preparedRecord struct {
	lsn uint64
	rec logRecord
}

// apply publishes a replayed record's changes on its branch as of lsn.
func (d *Database) apply(ctx context.Context, lsn uint64, rec logRecord) error {
	if rec.retry != nil {
		d.retries.add(lsn, rec.retry)
	}
	b := d.loadedBranch(rec.branch)
	if b == nil {
		return nil // the branch was deleted after this record
	}
	cur := b.state.Load()
	if lsn <= cur.lsn {
		return nil // already in this branch's checkpoint
	}
	tx := newTx(d.ns, cur)
	tx.capture = d.engine.changes != nil && lsn > d.engine.changes.LastLSN(d.name)
	if err := tx.redo(ctx, rec.ops); err != nil {
		return err
	}
	b.setDurable(tx.publish(lsn))
	d.queueEntry(ChangeEntry{At: rec.at, Wall: time.Unix(int64(rec.at>>32), 0), DB: d.name, Branch: b.name, LSN: lsn,
		Events: tx.events, Txn: txnOf(rec.retry)}, false)
	return nil
}

// resolvePrepared settles the prepared records replay left waiting: one
// whose transaction the decision log holds is applied and given its
// commit mark; any other never committed and is dropped. Called once the
// log takes new records.
func (d *Database) resolvePrepared(ctx context.Context) error {
	pending := d.prepared
	d.prepared = nil
	for id, p := range pending {
		if !d.engine.decisions.decided(id) {
			d.log.Info().Str("c", "RECOVERY").Str("db", d.name).Uint64("lsn", p.lsn).
				Msg("dropped the prepared part of a transaction that did not commit")
			continue
		}
		if err := d.apply(ctx, p.lsn, p.rec); err != nil {
			return err
		}
		lsn, err := d.wl.Append(encodeMarkedRecord(p.rec.branch, nil, nil, 0, markCommit, id))
		if err == nil {
			err = d.wl.WaitDurable(lsn)
		}
		if err != nil {
			return fmt.Errorf("commit mark of a decided transaction: %w", err)
		}
	}
	return nil
}
