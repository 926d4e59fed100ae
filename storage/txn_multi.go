package storage

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/dumbodb/dumbodb/storage/wal"
)

// CommitTxns commits one transaction's parts on several databases (one
// Txn per database) as a unit (docs/design/transactions.md, "Commit"): all
// of it is visible and durable, or none, also across a crash. With one
// part that writes, it is that part's Commit. Otherwise, under every
// part's branch lock (taken in database-name order), each part is checked
// and replayed onto its branch as Commit does, written to its database's
// log as a prepared record, and all are made durable; the decision log's
// append is the commit point; then every part is published and gets its
// commit mark (docs/format/txnlog.md). Every Txn ends either way.
func CommitTxns(ctx context.Context, txns []*Txn) error {
	defer func() {
		for _, t := range txns {
			t.end()
		}
	}()
	if len(txns) > 0 {
		var leave func()
		var err error
		if ctx, leave, err = txns[0].d.enterGate(ctx); err != nil {
			return err
		}
		defer leave()
	}
	var writers []*Txn
	for _, t := range txns {
		if t.tx.dirty() {
			writers = append(writers, t)
		}
	}
	switch len(writers) {
	case 0:
		return nil
	case 1:
		t := writers[0]
		lsn, err := t.commitLocked(ctx)
		return t.d.awaitWrite(ctx, lsn, err)
	}
	slices.SortFunc(writers, func(a, b *Txn) int { return cmp.Compare(a.d.name, b.d.name) })
	parts := make([]*commitPart, len(writers))
	for i, t := range writers {
		parts[i] = &commitPart{t: t}
	}
	err := commitParts(ctx, parts)
	for _, p := range parts {
		if errors.Is(p.logErr, wal.ErrWriteFailed) {
			p.t.d.recoverFromLogFailure()
		}
	}
	return diskFull(err)
}

// commitPart is one database's share of a commit over several.
type commitPart struct {
	t        *Txn
	tx       *Tx    // its changes, replayed onto the current state if the branch moved
	prepared uint64 // LSN of its prepared record
	mark     uint64 // LSN of its commit mark
	logErr   error  // a failed log write, rolled back after the locks
	at       uint64 // cluster time of its prepared record
}

// commitParts runs the locked steps, then waits for the commit marks so
// that the decision is no longer needed.
func commitParts(ctx context.Context, parts []*commitPart) error {
	e := parts[0].t.d.engine
	decided, err := commitLockedParts(ctx, parts)
	if !decided {
		return err
	}
	err = waitAll(parts, func(p *commitPart) error {
		if p.logErr != nil {
			return p.logErr // no mark: recovery needs the decision
		}
		p.logErr = p.t.d.wl.WaitDurable(p.mark)
		return p.logErr
	})
	if err == nil {
		e.decisions.done() // else the decision stays for recovery
	}
	// Committed either way: a mark that did not become durable is made
	// good from the decision log by recovery.
	return nil
}

// commitLockedParts prepares, decides and publishes under every part's
// branch lock; decided reports that the commit point was passed.
func commitLockedParts(ctx context.Context, parts []*commitPart) (decided bool, err error) {
	for _, p := range parts {
		p.t.d.engine.lockWriter(p.t.b)
		defer p.t.b.writeMu.Unlock()
	}
	defer func() { // also on a panic: a reserved place would hold back the database's events
		for _, p := range parts {
			if !decided && p.prepared != 0 {
				p.t.d.cancelReserved(p.prepared)
			}
		}
	}()
	for _, p := range parts {
		if p.tx, err = p.t.changesOnCurrent(ctx); err != nil {
			return false, err
		}
	}
	var id txnID
	rand.Read(id[:])
	e := parts[0].t.d.engine
	at := e.commitTimes.take(e)
	defer e.commitTimes.done(at) // after every part is published, or none
	if err := prepareParts(parts, id, at); err != nil {
		markParts(parts, markAbort, id)
		return false, err
	}
	e.panics.at("txn.prepared")
	if err := e.decisions.decide(id, partNames(parts)); err != nil {
		markParts(parts, markAbort, id)
		return false, fmt.Errorf("commit decision: %w", err)
	}
	e.panics.at("txn.decided")
	for _, p := range parts {
		p.publish()
	}
	markParts(parts, markCommit, id)
	return true, nil
}

// changesOnCurrent is what the transaction commits onto its branch's
// current state: its own changes, or their replay when the branch moved
// since its snapshot (ErrWriteConflict when one of its documents changed).
// Called with the branch's writer lock held.
func (t *Txn) changesOnCurrent(ctx context.Context) (*Tx, error) {
	if err := t.d.writable(t.b); err != nil {
		return nil, err
	}
	tx := t.tx
	if cur := t.b.state.Load(); cur != t.snap.st {
		var err error
		if tx, err = t.rebase(ctx, cur); err != nil {
			return nil, err
		}
	}
	tx.note = t.note
	return tx, nil
}

// prepareParts appends every part's prepared record, stamped at, and
// waits until all are durable. One cluster time serves every part, as
// mongod's one applyOps entry: the commit's events share it, and its
// operationTime is it.
func prepareParts(parts []*commitPart, id txnID, at uint64) error {
	for _, p := range parts {
		p.at = at
		rec := encodeMarkedRecord(p.t.b.name, p.tx.ops, p.tx.retry, p.at, markPrepared, id)
		if p.prepared, p.logErr = p.t.d.appendRecord(rec); p.logErr != nil {
			return p.logErr
		}
	}
	return waitAll(parts, func(p *commitPart) error {
		p.logErr = p.t.d.wl.WaitDurable(p.prepared)
		return p.logErr
	})
}

// publish makes a prepared part visible, as of its prepared record (which
// is durable, so no later log failure takes it back).
func (p *commitPart) publish() {
	d, b := p.t.d, p.t.b
	cur := b.state.Load()
	if p.tx.retry != nil {
		d.retries.add(p.prepared, p.tx.retry)
	}
	next := p.tx.publish(p.prepared)
	p.t.at = p.at
	b.publishLogged(next, d.wl.Durable(), p.at) // visible before its events, as in logAndPublish
	b.addNote(p.tx)
	d.queueChanges(b, p.prepared, p.at, p.tx)
	d.flushChanges() // the prepared record is durable already
	d.engine.addEditBytes(next.editBytes() - cur.editBytes())
}

// markParts appends a commit or abort mark to every part's log. A mark
// that fails to append is not an error: replay treats a prepared record
// without one by the decision log.
func markParts(parts []*commitPart, mark string, id txnID) {
	for _, p := range parts {
		if p.prepared == 0 {
			continue // nothing of this part reached its log
		}
		lsn, err := p.t.d.wl.Append(encodeMarkedRecord(p.t.b.name, nil, nil, 0, mark, id))
		if err == nil {
			p.mark = lsn
		} else if p.logErr == nil {
			p.logErr = err
		}
	}
}

// partNames are the participants as the decision log names them.
func partNames(parts []*commitPart) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p.t.d.name + "@" + p.t.b.name
	}
	return out
}

// waitAll runs fn for every part at once (each database's log syncs on
// its own) and returns the first error.
func waitAll(parts []*commitPart, fn func(*commitPart) error) error {
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
