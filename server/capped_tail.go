package server

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/plan"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Tailable cursors on capped collections (docs/design/capped.md): the
// cursor remembers the record id of the last document it examined and
// each batch reads the documents inserted after it from the branch's
// newest state.

// errTailEnd ends a tailable cursor's batch without closing the cursor:
// there is nothing new yet.
var errTailEnd = errors.New("no new documents in the capped collection yet")

// tailSource yields the documents of a capped collection after last, then
// errTailEnd, and again once more are inserted.
type tailSource struct {
	d     *storage.Database
	rev   storage.Revision
	coll  string
	f     *query.Filter
	proj  *query.Projection
	await bool
	// skip and limit count matching documents (limit 0: none).
	skip, limit, returned int64
	last                  int64 // record id of the last document examined
	buf                   []bsoncore.Document
}

func (s *tailSource) Next(ctx context.Context) (bsoncore.Document, error) {
	if s.limit > 0 && s.returned >= s.limit {
		return nil, io.EOF
	}
	if len(s.buf) == 0 {
		if err := s.refill(ctx); err != nil {
			return nil, err
		}
	}
	if len(s.buf) == 0 {
		return nil, errTailEnd
	}
	d := s.buf[0]
	s.buf = s.buf[1:]
	s.returned++
	return d, nil
}

// empty reports whether the collection holds no document: mongod does not
// keep a tailable cursor on an empty collection (its first batch answers
// id 0), and keeps one on any other, whatever the batch held.
func (s *tailSource) empty(ctx context.Context) (bool, error) {
	snap, err := s.d.SnapshotAt(ctx, s.rev)
	if err != nil {
		return false, err
	}
	n, err := snap.Count(s.coll)
	return n == 0, err
}

// refill reads what was inserted after last. The cursor dies, as on
// mongod, when the document it stopped at is gone (removed by an overflow
// or a delete: CappedPositionLost) or the collection is.
func (s *tailSource) refill(ctx context.Context) error {
	snap, err := s.d.SnapshotAt(ctx, s.rev)
	if err != nil {
		return err
	}
	if info, ok := snap.Collection(s.coll); !ok || !info.Capped() {
		return mongoerr.New(mongoerr.QueryPlanKilled, "collection dropped")
	}
	entries, err := snap.NaturalAfter(ctx, s.coll, max(s.last-1, 0))
	if err != nil {
		return err
	}
	if s.last > 0 {
		if len(entries) == 0 || entries[0].RecordID != s.last {
			return mongoerr.New(mongoerr.CappedPositionLost, "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(%d)", s.last)
		}
		entries = entries[1:]
	}
	for _, e := range entries {
		doc, found, err := snap.GetKey(ctx, s.coll, e.IDKey)
		if err != nil {
			return err
		}
		s.last = e.RecordID
		if !found || !s.f.Match(doc) {
			continue
		}
		if s.skip > 0 {
			s.skip--
			continue
		}
		if s.proj != nil {
			if doc, err = s.proj.Apply(doc); err != nil {
				return err
			}
		}
		s.buf = append(s.buf, doc)
	}
	return nil
}

// tailFind opens a find's tailable cursor, after mongod's checks of the
// options that go with tailable.
func (r *request) tailFind(coll string, a *findArgs, f *query.Filter, proj *query.Projection, srt *query.Sort) (docSource, error) {
	switch {
	case srt != nil && (srt.HasKeys() || srt.Natural() < 0):
		return nil, mongoerr.New(mongoerr.BadValue, "cannot use tailable option with a sort other than {$natural: 1}")
	case plan.Natural(nil, a.hint) < 0:
		return nil, mongoerr.New(mongoerr.NotImplemented, "a tailable find with hint {$natural: -1} is not supported by DumboDB")
	case a.hint.Type != 0 && !isNaturalHint(a.hint):
		return nil, mongoerr.New(mongoerr.NotImplemented, "a tailable find with an index hint is not supported by DumboDB")
	case a.returnKey || a.showRecordID:
		return nil, mongoerr.New(mongoerr.NotImplemented, "a tailable find with returnKey or showRecordId is not supported by DumboDB")
	case len(a.min) > 0 || len(a.max) > 0:
		return nil, mongoerr.New(mongoerr.NotImplemented, "a tailable find with min or max is not supported by DumboDB")
	case r.txn != nil:
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "tailable cursors are not allowed in a transaction")
	}
	d, err := r.database(false)
	if err != nil || d == nil {
		return nil, cmpErr(err, notCappedError())
	}
	rev, err := r.revision(d)
	if err != nil {
		return nil, err
	}
	return &tailSource{d: d, rev: rev, coll: coll, f: f, proj: proj, await: a.awaitData, skip: a.skip, limit: a.limit}, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// isNaturalHint reports whether a hint is {$natural: ...}.
func isNaturalHint(hint bsoncore.Value) bool {
	d, ok := hint.DocumentOK()
	if !ok {
		return false
	}
	_, err := d.LookupErr("$natural")
	return err == nil
}

// tailGetMore reads a tailable cursor's next batch; an awaitData cursor
// waits for new documents up to the getMore's maxTimeMS (default 1 s)
// when there are none, as mongod does.
func (r *request) tailGetMore(cur *cursor, t *tailSource, batchSize int) ([]bsoncore.Document, bool, error) {
	deadline := time.Now().Add(defaultAwait)
	if d, ok := r.ctx.Deadline(); ok {
		deadline = d.Add(-time.Millisecond) // answer before the command's own deadline
	}
	for {
		var wait <-chan struct{}
		if cl := r.c.s.engine.Changes(); cl != nil {
			wait = cl.Wait()
		}
		docs, done, err := r.nextBatch(cur, batchSize)
		if err != nil || done || len(docs) > 0 || !t.await {
			return docs, done, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return docs, false, nil
		}
		r.awaited = true
		awaitChange(r.ctx, wait, min(left, tailPoll))
		switch err := r.ctx.Err(); {
		case errors.Is(err, context.DeadlineExceeded):
			return docs, false, nil // maxTimeMS is how long to wait, not a failure
		case err != nil:
			return nil, false, interrupt.Err(r.ctx) // killed (killOp, a closed connection)
		}
	}
}

// tailPoll bounds one wait for a change: the change log's signal covers
// every write, but a server without a change log has none to give.
const tailPoll = 50 * time.Millisecond

// awaitChange waits until wait is closed, d passes or ctx ends.
func awaitChange(ctx context.Context, wait <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-wait:
	case <-t.C:
	case <-ctx.Done():
	}
}

// checkTailMaxTime refuses a getMore's maxTimeMS on a tailable cursor
// that does not await data, as mongod does.
func (r *request) checkTailMaxTime(cur *cursor) error {
	if _, err := r.argErr("maxTimeMS"); err != nil {
		return nil
	}
	if t := cur.tail; t == nil || t.await {
		return nil
	}
	return mongoerr.New(mongoerr.BadValue, "cannot set maxTimeMS on getMore command for a non-awaitData cursor")
}
