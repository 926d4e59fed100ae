package query

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"sort"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// Blocking stages account for what they hold in a memBudget. Past the
// limit they fail with code 292 unless the command allowed disk use;
// $sort then spills sorted runs to temporary files and merges them, and
// $group, $bucket, $bucketAuto and $setWindowFields go through the same
// external sort (by group key, or by partition and sortBy); the other
// blocking stages simply go on in memory.

type memBudget struct {
	stage     string
	limit     int64
	used      int64
	allowDisk bool
	spills    *spillSet // the pipeline's, where sortStream's runs go
}

func (pc *pipeCtx) budget(stage string) *memBudget {
	return &memBudget{stage: stage, limit: pc.opts.MemoryLimit, allowDisk: pc.opts.AllowDiskUse, spills: pc.opts.spills}
}

// spilling is a fresh budget of the same stage for the external sort a
// stage falls back to once over its budget with allowDiskUse.
func (m *memBudget) spilling() *memBudget {
	return &memBudget{stage: m.stage, limit: m.limit, allowDisk: true, spills: m.spills}
}

// add records n more bytes held; it fails once over the limit without
// allowDiskUse.
func (m *memBudget) add(n int) error {
	m.used += int64(n)
	if m.used <= m.limit || m.allowDisk {
		return nil
	}
	if m.stage == "$sort" {
		return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Sort exceeded memory limit of %d bytes, but did not opt in to external sorting. Aborting operation. Pass allowDiskUse:true to opt in.", m.limit)
	}
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Exceeded memory limit for %s, but didn't allow external spilling; pass allowDiskUse:true to opt in", m.stage)
}

func (m *memBudget) over() bool { return m.used > m.limit }

// tooLargeUnit is the error of a stage one of whose units (a window
// partition, a bucket, a group) outgrows the memory limit on its own:
// spilling cannot split it, so allowDiskUse does not help.
func tooLargeUnit(stage, unit string, limit int64) error {
	return mongoerr.New(mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed, "Exceeded memory limit for %s: a single %s is larger than %d bytes, which spilling to disk cannot split", stage, unit, limit)
}

// sortStream sorts its input stably, spilling runs to disk past the
// budget when allowed.
func sortStream(ctx context.Context, in Stream, cmp func(a, b bsoncore.Document) int, b *memBudget) (Stream, error) {
	var docs []bsoncore.Document
	var runs []*os.File
	for {
		d, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.spills.release(runs...)
			return nil, err
		}
		docs = append(docs, d)
		if err := b.add(len(d)); err != nil {
			return nil, err
		}
		if b.over() {
			f, err := b.spills.spillRun(ctx, docs, cmp)
			if err != nil {
				b.spills.release(runs...)
				return nil, err
			}
			runs = append(runs, f)
			docs, b.used = nil, 0
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return cmp(docs[i], docs[j]) < 0 })
	if len(runs) == 0 {
		return &sliceStream{docs: docs}, nil
	}
	return newMergeStream(b.spills, runs, docs, cmp)
}

// spillSet holds the open spill files of one pipeline, so that they are
// closed however its stream ends: a run read to its end is released at
// once, an error releases the runs of the sort that failed, and
// RunningPipeline.Close the rest (a stream abandoned midway: a killed or
// expired cursor). Close may come from another goroutine than Next (a
// cursor killed while a getMore reads it), hence the lock.
type spillSet struct {
	mu     sync.Mutex
	files  map[*os.File]bool
	closed bool
}

func newSpillSet() *spillSet { return &spillSet{files: map[*os.File]bool{}} }

// create makes an unlinked temporary file: the name goes at once, so that
// not even a crash leaves the file behind; the open handle keeps the data
// until it is released.
func (s *spillSet) create() (*os.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		// Only a Next racing the pipeline's Close gets here: the cursor
		// it reads for is gone.
		return nil, mongoerr.Interruption(context.Canceled)
	}
	f, err := os.CreateTemp("", "dumbodb-sort-*")
	if err != nil {
		return nil, err
	}
	os.Remove(f.Name())
	s.files[f] = true
	return f, nil
}

// release closes files that are still open.
func (s *spillSet) release(files ...*os.File) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range files {
		if s.files[f] {
			delete(s.files, f)
			f.Close()
		}
	}
}

// close closes every open file; the set takes no new ones.
func (s *spillSet) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var first error
	for f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	clear(s.files)
	return first
}

// spillRun writes docs, sorted, to a new spill file.
func (s *spillSet) spillRun(ctx context.Context, docs []bsoncore.Document, cmp func(a, b bsoncore.Document) int) (*os.File, error) {
	sort.SliceStable(docs, func(i, j int) bool { return cmp(docs[i], docs[j]) < 0 })
	f, err := s.create()
	if err != nil {
		return nil, err
	}
	if err := writeRun(ctx, f, docs); err != nil {
		s.release(f)
		return nil, err
	}
	return f, nil
}

// writeRun writes docs to f and rewinds it for reading.
func writeRun(ctx context.Context, f *os.File, docs []bsoncore.Document) error {
	w := bufio.NewWriter(f)
	var interrupt interrupt.Pacer
	for _, d := range docs {
		if err := interrupt.Check(ctx); err != nil {
			return err
		}
		if _, err := w.Write(d); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}

// runReader reads the documents of one spilled run back.
type runReader struct {
	f   *os.File
	r   *bufio.Reader
	cur bsoncore.Document
	idx int // run order, which breaks ties to keep the sort stable
}

// advance reads the next document into cur; nil at the end of the run.
func (r *runReader) advance() error {
	var hdr [4]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		r.cur = nil
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	d := make([]byte, n)
	copy(d, hdr[:])
	if _, err := io.ReadFull(r.r, d[4:]); err != nil {
		return err
	}
	r.cur = d
	return nil
}

// mergeStream merges sorted runs (the in-memory tail is the last run).
type mergeStream struct {
	h         runHeap
	mem       []bsoncore.Document
	spills    *spillSet
	interrupt interrupt.Pacer
}

type runHeap struct {
	runs []*runReader
	cmp  func(a, b bsoncore.Document) int
}

func (h runHeap) Len() int { return len(h.runs) }
func (h runHeap) Less(i, j int) bool {
	if c := h.cmp(h.runs[i].cur, h.runs[j].cur); c != 0 {
		return c < 0
	}
	return h.runs[i].idx < h.runs[j].idx
}
func (h runHeap) Swap(i, j int) { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)   { h.runs = append(h.runs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}

func newMergeStream(spills *spillSet, runs []*os.File, mem []bsoncore.Document, cmp func(a, b bsoncore.Document) int) (Stream, error) {
	m := &mergeStream{h: runHeap{cmp: cmp}, mem: mem, spills: spills}
	for i, f := range runs {
		r := &runReader{f: f, r: bufio.NewReader(f), idx: i}
		if err := r.advance(); err != nil {
			spills.release(runs...)
			return nil, err
		}
		if r.cur == nil {
			spills.release(f)
			continue
		}
		m.h.runs = append(m.h.runs, r)
	}
	heap.Init(&m.h)
	return m, nil
}

func (m *mergeStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if err := m.interrupt.Check(ctx); err != nil {
		return nil, err
	}
	if m.h.Len() == 0 {
		if len(m.mem) == 0 {
			return nil, io.EOF
		}
		d := m.mem[0]
		m.mem = m.mem[1:]
		return d, nil
	}
	top := m.h.runs[0]
	if len(m.mem) > 0 && m.h.cmp(m.mem[0], top.cur) < 0 {
		d := m.mem[0]
		m.mem = m.mem[1:]
		return d, nil
	}
	d := top.cur
	if err := top.advance(); err != nil {
		return nil, err
	}
	if top.cur == nil {
		heap.Pop(&m.h)
		m.spills.release(top.f)
	} else {
		heap.Fix(&m.h, 0)
	}
	return d, nil
}
