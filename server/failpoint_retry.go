package server

import (
	"errors"
	"fmt"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// retryFailPoint is mongod's "onPrimaryTransactionalWrite" fail point,
// which drivers' retryable-write tests use. mongod consults it each time
// a retryable write (outside a transaction) commits a unit of work that
// wrote: a statement (an update, a delete, findAndModify) or a group of
// inserted documents (insertGroup). When it fires it closes the
// connection (data.closeConnection, true unless false): the write and the
// command's other statements go on, but the client never hears of them,
// so that its retry must answer from the recorded outcomes. With
// data.failBeforeCommitExceptionCode the unit of work fails with that
// code and writes nothing.
type retryFailPoint struct {
	mu        sync.Mutex
	remaining int // -1: always
	skip      int
	retryFailure
}

// retryFailure is what the fail point does to a unit of work it fires on.
type retryFailure struct {
	closeConn bool
	failCode  int32 // failBeforeCommitExceptionCode (0: the write stands)
}

func (f *retryFailPoint) configure(times, skip int, data bsoncore.Document) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remaining, f.skip, f.retryFailure = times, skip, retryFailure{closeConn: true}
	if b, ok := asBool(data.Lookup("closeConnection")); ok {
		f.closeConn = b
	}
	if code, ok := value.AsInt64(data.Lookup("failBeforeCommitExceptionCode")); ok {
		f.failCode = int32(code)
	}
}

// watch follows a retryable write command through the fail point (nil
// when the fail point is off).
func (f *retryFailPoint) watch() *primaryWrites {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.remaining == 0 {
		return nil
	}
	return &primaryWrites{fp: f, counted: map[int32]bool{}, failing: map[int32]int32{}, single: map[int32]bool{}}
}

// pass counts one unit of work's pass: what the fail point does to it,
// if it fires.
func (f *retryFailPoint) pass() (retryFailure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !pass(&f.skip, &f.remaining) {
		return retryFailure{}, false
	}
	return f.retryFailure, true
}

// errWriteAgain: the fail point failed a unit of work that the command's
// storage transaction has already written. The transaction is dropped
// and the command's writes run again (writeTo), with the unit failing
// before it writes.
var errWriteAgain = errors.New("a unit of work failed at onPrimaryTransactionalWrite: the write runs again")

// primaryWrites follows one retryable write command through the fail
// point. Its units of work are named by their first statement's id; a
// write that runs again after errWriteAgain does not count again the
// units that already passed.
type primaryWrites struct {
	fp        *retryFailPoint
	closeConn bool            // a unit that passed closed the connection
	counted   map[int32]bool  // units that passed
	failing   map[int32]int32 // statements failed before they write, with the code
	single    map[int32]bool  // insert groups written one document at a time
}

// closesConnection reports whether the command ends without a reply.
func (p *primaryWrites) closesConnection() bool { return p != nil && p.closeConn }

// unitWrote counts the pass of the unit of work first (group: a group of
// several inserted documents), which wrote: errWriteAgain when the fail
// point fails it.
func (p *primaryWrites) unitWrote(first int32, group bool) error {
	if p.counted[first] {
		return nil
	}
	f, fired := p.fp.pass()
	p.closeConn = p.closeConn || (fired && f.closeConn)
	if !fired || f.failCode == 0 {
		p.counted[first] = true
		return nil
	}
	// mongod inserts a failed group's documents again one at a time.
	if group {
		p.single[first] = true
	} else {
		p.failing[first] = f.failCode
	}
	return errWriteAgain
}

// commandWrote counts the pass of a command written as one unit of work
// (a time-series insert, whose measurements are written together): the
// fail point's failure is the command's error, which drops its writes.
func (p *primaryWrites) commandWrote(w *retryableWrite) error {
	if p == nil {
		return nil
	}
	f, fired := p.fp.pass()
	p.closeConn = p.closeConn || (fired && f.closeConn)
	if !fired || f.failCode == 0 {
		return nil
	}
	return failedWrite(f.failCode, w)
}

// failsBefore is the error of a statement the fail point failed (nil:
// it runs).
func (p *primaryWrites) failsBefore(id int32, w *retryableWrite) error {
	code, ok := p.failing[id]
	if !ok {
		return nil
	}
	return failedWrite(code, w)
}

// failedWrite is the error of a write the fail point failed.
func failedWrite(code int32, w *retryableWrite) error {
	return mongoerr.New(mongoerr.Code(code), "Failing write for %s:%d due to failpoint. The write must not be reflected.",
		sessionName(w.session), w.txn)
}

// sessionName is a logical session id as mongod writes it in messages.
func sessionName(k storage.SessionKey) string {
	id := k.ID
	return fmt.Sprintf("{ id: UUID(\"%x-%x-%x-%x-%x\"), uid: BinData(0, %X) }", id[0:4], id[4:6], id[6:8], id[8:10], id[10:], k.UID)
}

// mongod inserts a command's documents in groups, each one unit of work:
// consecutive documents not written by an earlier try, until a group
// holds internalInsertMaxBatchSize documents or insertVectorMaxBytes.
// A group of several documents that fails (a document is refused, or the
// fail point fails it) is inserted again one document at a time, each
// its own unit; so is every document of a capped collection.
const (
	insertGroupDocs  = 64
	insertGroupBytes = 256 << 10
)

// statementPasses takes a write command's statements through the fail
// point, as they run in turn (runBatch).
type statementPasses struct {
	p       *primaryWrites // nil: the fail point is off
	w       *retryableWrite
	grouped bool // documents inserted into a collection that is not capped
	group   insertGroup
}

// insertGroup is the group of documents being inserted.
type insertGroup struct {
	open    bool
	first   int32 // its first document's statement id
	docs    int   // its documents, refused ones included
	bytes   int
	single  bool    // inserted one document at a time
	pending []int32 // documents written as a group, not yet passed
}

// statementPasses takes the command's statements through the fail point;
// grouped for documents inserted as mongod groups them.
func (r *request) statementPasses(grouped bool) *statementPasses {
	return &statementPasses{p: r.primaryWrites, w: r.retry, grouped: grouped}
}

// before is called before statement i, of size bytes, runs: it closes a
// full insert group and opens one. stmtErr is the statement's error when
// the fail point failed it before it writes.
func (s *statementPasses) before(i, size int) (stmtErr, err error) {
	if s.p == nil {
		return nil, nil
	}
	id := s.w.stmtID(i)
	if s.grouped {
		if s.group.open && (s.group.docs >= insertGroupDocs || s.group.bytes >= insertGroupBytes) {
			if err := s.flush(); err != nil {
				return nil, err
			}
		}
		if !s.group.open {
			s.group = insertGroup{open: true, first: id, single: s.p.single[id]}
		}
		s.group.docs++
		s.group.bytes += size
	}
	return s.p.failsBefore(id, s.w), nil
}

// wrote is called after statement i wrote.
func (s *statementPasses) wrote(i int) error {
	if s.p == nil {
		return nil
	}
	id := s.w.stmtID(i)
	if s.grouped && !s.group.single {
		s.group.pending = append(s.group.pending, id)
		return nil
	}
	return s.p.unitWrote(id, false)
}

// failed is called after a statement failed: the group it is in is
// inserted one document at a time, the documents written before it
// passing one by one.
func (s *statementPasses) failed() error {
	if s.p == nil || !s.grouped || s.group.single {
		return nil
	}
	s.group.single = true
	s.p.single[s.group.first] = true
	pending := s.group.pending
	s.group.pending = nil
	for _, id := range pending {
		if err := s.p.unitWrote(id, false); err != nil {
			return err
		}
	}
	return nil
}

// flush closes the insert group: before a statement an earlier try
// wrote, and after the last statement.
func (s *statementPasses) flush() error {
	if s.p == nil || !s.group.open {
		return nil
	}
	g := s.group
	s.group = insertGroup{}
	switch {
	case len(g.pending) == 0:
		return nil
	case g.docs == 1:
		return s.p.unitWrote(g.pending[0], false)
	}
	return s.p.unitWrote(g.first, true)
}
