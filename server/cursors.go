package server

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"sync"
	"time"

	"dumbodb/query"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cursorIdleTimeout is mongod's cursorTimeoutMillis default: idle cursors
// are killed after 10 minutes.
const cursorIdleTimeout = 10 * time.Minute

// Batch limits: the first batch of find holds 101 documents by default, and
// no batch is bigger than the largest reply (16 MiB of documents).
const (
	defaultFirstBatch = 101
	maxBatchBytes     = 16 * 1024 * 1024
)

// docSource yields documents one at a time; Next returns io.EOF at the end.
type docSource interface {
	Next(ctx context.Context) (bsoncore.Document, error)
}

// cursor is a server-side cursor: the rest of a result after a batch.
type cursor struct {
	id        int64
	ns        string
	src       *peekSource
	noTimeout bool

	mu       sync.Mutex // one getMore at a time
	lastUsed time.Time
}

type cursorRegistry struct {
	mu      sync.Mutex
	cursors map[int64]*cursor
}

func newCursorRegistry() *cursorRegistry { return &cursorRegistry{cursors: map[int64]*cursor{}} }

func (r *cursorRegistry) add(ns string, src *peekSource, noTimeout bool) *cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &cursor{ns: ns, src: src, noTimeout: noTimeout, lastUsed: time.Now()}
	for c.id == 0 || r.cursors[c.id] != nil {
		var b [8]byte
		rand.Read(b[:])
		c.id = int64(binary.LittleEndian.Uint64(b[:]) &^ (1 << 63))
	}
	r.cursors[c.id] = c
	return c
}

func (r *cursorRegistry) get(id int64) *cursor {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cursors[id]
}

func (r *cursorRegistry) remove(id int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.cursors[id]
	delete(r.cursors, id)
	if ok {
		c.src.close()
	}
	return ok
}

func (r *cursorRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.cursors)
}

func (r *cursorRegistry) reapIdle(idle time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for id, c := range r.cursors {
		if c.mu.TryLock() {
			if !c.noTimeout && now.Sub(c.lastUsed) > idle {
				delete(r.cursors, id)
				c.src.close()
			}
			c.mu.Unlock()
		}
	}
}

// peekSource lets a batch end exactly at the end of the result, so that a
// result that fits in one batch gets cursor id 0 and needs no getMore.
type peekSource struct {
	src     docSource
	pending bsoncore.Document
	done    bool
}

func (p *peekSource) next(ctx context.Context) (bsoncore.Document, error) {
	if p.pending != nil {
		d := p.pending
		p.pending = nil
		return d, nil
	}
	if p.done {
		return nil, io.EOF
	}
	d, err := p.src.Next(ctx)
	if errors.Is(err, io.EOF) {
		p.done = true
	}
	return d, err
}

// close releases what the source holds (an aggregation's spill files)
// once its cursor ends, however it ends.
func (p *peekSource) close() {
	if c, ok := p.src.(io.Closer); ok {
		c.Close()
	}
}

func (p *peekSource) exhausted(ctx context.Context) (bool, error) {
	if p.pending != nil {
		return false, nil
	}
	d, err := p.next(ctx)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	p.pending = d
	return false, nil
}

// fillBatch takes up to n documents (n <= 0: no count limit) and at most
// maxBatchBytes, but always at least one, and reports whether the source is
// exhausted afterwards.
func fillBatch(ctx context.Context, p *peekSource, n int) ([]bsoncore.Document, bool, error) {
	var docs []bsoncore.Document
	size := 0
	for n <= 0 || len(docs) < n {
		d, err := p.next(ctx)
		if errors.Is(err, io.EOF) {
			return docs, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		if len(docs) > 0 && size+len(d) > maxBatchBytes {
			p.pending = d
			break
		}
		docs = append(docs, d)
		size += len(d)
		if err := query.ContextErr(ctx); err != nil {
			return nil, false, err
		}
	}
	done, err := p.exhausted(ctx)
	return docs, done, err
}

// cursorReply builds {cursor: {id, ns, <batchKey>: [...]}, ok: 1}.
func cursorReply(id int64, ns, batchKey string, docs []bsoncore.Document) bsoncore.Document {
	dst := make([]byte, 0, 256)
	idx, dst := bsoncore.AppendDocumentStart(dst)
	cidx, dst := bsoncore.AppendDocumentElementStart(dst, "cursor")
	dst = bsoncore.AppendInt64Element(dst, "id", id)
	dst = bsoncore.AppendStringElement(dst, "ns", ns)
	dst = appendDocArray(dst, batchKey, docs)
	dst, _ = bsoncore.AppendDocumentEnd(dst, cidx)
	dst = bsoncore.AppendDoubleElement(dst, "ok", 1)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// startCursor sends the first batch of src and registers a cursor for the
// rest, if any. singleBatch closes the cursor after the first batch.
func (r *request) startCursor(ns string, src docSource, batchSize int, singleBatch, noTimeout bool) (bsoncore.Document, error) {
	if batchSize == 0 && !singleBatch {
		batchSize = defaultFirstBatch
	}
	p := &peekSource{src: src}
	docs, done, err := fillBatch(r.ctx, p, batchSize)
	if err != nil {
		p.close()
		return nil, err
	}
	var id int64
	if !done && !singleBatch {
		id = r.c.s.cursors.add(ns, p, noTimeout).id
	} else {
		p.close()
	}
	return cursorReply(id, ns, "firstBatch", docs), nil
}

// sliceSource serves a materialised result.
type sliceSource struct{ docs []bsoncore.Document }

func (s *sliceSource) Next(context.Context) (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, io.EOF
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}
