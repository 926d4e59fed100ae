package storage

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
)

// DefaultIndexBuildMemory is what an index build may hold of sorted keys
// before it spills them to disk: mongod's default for
// maxIndexBuildMemoryUsageMegabytes.
const DefaultIndexBuildMemory = 200 << 20

// spillDirName is the directory under the data directory that holds index
// builds' spilled runs (mongod's _tmp; a name no database can take),
// emptied at every open.
const spillDirName = ".tmp"

// indexBuildSettings are process-wide, like the server parameter that sets
// them: a process serves one data directory.
var indexBuildSettings struct {
	memory atomic.Int64
	mu     sync.Mutex
	dir    string // "": the system's temporary directory
}

func init() { indexBuildSettings.memory.Store(DefaultIndexBuildMemory) }

// IndexBuildMemory is the memory budget of an index build's sort.
func IndexBuildMemory() int64 { return indexBuildSettings.memory.Load() }

// SetIndexBuildMemory sets the memory budget of the sorts of index builds
// that start from now on.
func SetIndexBuildMemory(bytes int64) { indexBuildSettings.memory.Store(bytes) }

// useSpillDir makes dir the place of index builds' spilled runs, after
// removing what an earlier process left there (a build cut short by a
// crash).
func useSpillDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	indexBuildSettings.mu.Lock()
	indexBuildSettings.dir = dir
	indexBuildSettings.mu.Unlock()
	return nil
}

// forgetSpillDir stops using dir (its engine closed).
func forgetSpillDir(dir string) {
	indexBuildSettings.mu.Lock()
	if indexBuildSettings.dir == dir {
		indexBuildSettings.dir = ""
	}
	indexBuildSettings.mu.Unlock()
}

func spillDir() string {
	indexBuildSettings.mu.Lock()
	defer indexBuildSettings.mu.Unlock()
	if indexBuildSettings.dir == "" {
		return os.TempDir()
	}
	return indexBuildSettings.dir
}

// entrySorter collects index entries and yields them in the order of the
// index map: by entry key, the key fields followed by the _id key. A run
// keeps its entries in one arena; past the sorter's budget the run is
// sorted and written to a spill file (docs/format/index-spill.md), and the
// sorted stream merges the runs.
type entrySorter struct {
	budget int
	run    sortRun
	spills []*os.File
}

// sortRun is a run's entries: each ref points at key then value in one
// of the arena's blocks, which are filled in turn and never moved.
type sortRun struct {
	blocks [][]byte
	held   int // bytes in blocks
	refs   []entryRef
}

type entryRef struct {
	prefix           uint64 // the key's first 8 bytes, big-endian: most comparisons end there
	block, off       uint32
	klen, flen, vlen uint32 // entry key, its key fields, value
}

// arenaBlock is the size of an arena block; a larger entry gets a block
// of its own.
const arenaBlock = 1 << 20

// refSize is what a ref costs the budget besides its bytes in the arena.
const refSize = 32

func newEntrySorter(budget int) *entrySorter { return &entrySorter{budget: budget} }

// add copies one entry in; the entry key is fields followed by id.
func (s *entrySorter) add(fields, id, value []byte) error {
	r := &s.run
	n := len(fields) + len(id) + len(value)
	last := len(r.blocks) - 1
	if last < 0 || len(r.blocks[last])+n > cap(r.blocks[last]) {
		r.blocks = append(r.blocks, make([]byte, 0, max(arenaBlock, n)))
		last++
	}
	b := r.blocks[last]
	ref := entryRef{block: uint32(last), off: uint32(len(b)),
		klen: uint32(len(fields) + len(id)), flen: uint32(len(fields)), vlen: uint32(len(value))}
	r.blocks[last] = append(append(append(b, fields...), id...), value...)
	var head [8]byte
	copy(head[:], r.blocks[last][ref.off:ref.off+ref.klen])
	ref.prefix = binary.BigEndian.Uint64(head[:])
	r.refs = append(r.refs, ref)
	r.held += n
	if r.held+refSize*len(r.refs) < s.budget {
		return nil
	}
	return s.spill()
}

// entry is a ref's key and value.
func (r *sortRun) entry(ref entryRef) []byte {
	return r.blocks[ref.block][ref.off : ref.off+ref.klen+ref.vlen]
}

func (r *sortRun) key(ref entryRef) []byte { return r.entry(ref)[:ref.klen] }

func (r *sortRun) value(ref entryRef) []byte { return r.entry(ref)[ref.klen:] }

func (r *sortRun) sort() {
	slices.SortFunc(r.refs, func(a, b entryRef) int {
		if a.prefix != b.prefix {
			return cmp.Compare(a.prefix, b.prefix)
		}
		return bytes.Compare(r.key(a), r.key(b))
	})
}

// reset empties the run, keeping its first block for the next.
func (r *sortRun) reset() {
	if len(r.blocks) > 0 {
		r.blocks = append(r.blocks[:0], r.blocks[0][:0])
	}
	r.held, r.refs = 0, r.refs[:0]
}

// spill writes the current run, sorted, to a new spill file and starts
// an empty run.
func (s *entrySorter) spill() (err error) {
	f, err := os.CreateTemp(spillDir(), "index-build-*.spill")
	if err != nil {
		return fmt.Errorf("index build: spill: %w", err)
	}
	os.Remove(f.Name()) // the open file is all the build needs
	s.spills = append(s.spills, f)
	r := &s.run
	r.sort()
	w := bufio.NewWriterSize(f, 1<<20)
	var head [3 * binary.MaxVarintLen32]byte
	for _, ref := range r.refs {
		n := binary.PutUvarint(head[:], uint64(ref.flen))
		n += binary.PutUvarint(head[n:], uint64(ref.klen))
		n += binary.PutUvarint(head[n:], uint64(ref.vlen))
		w.Write(head[:n])
		w.Write(r.entry(ref))
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("index build: spill: %w", err)
	}
	r.reset()
	return nil
}

// close removes the sorter's spill files.
func (s *entrySorter) close() {
	for _, f := range s.spills {
		f.Close()
	}
	s.spills = nil
}

// sortedEntry is one entry of the merged stream; its slices are valid
// until the next one.
type sortedEntry struct {
	key, value []byte
	flen       int
}

func (e sortedEntry) fields() []byte { return e.key[:e.flen] }
func (e sortedEntry) id() []byte     { return e.key[e.flen:] }

// entrySource is one sorted run being merged.
type entrySource interface {
	next() (sortedEntry, error) // io.EOF at the end
}

type memorySource struct {
	run *sortRun
	i   int
}

func (m *memorySource) next() (sortedEntry, error) {
	if m.i == len(m.run.refs) {
		return sortedEntry{}, io.EOF
	}
	ref := m.run.refs[m.i]
	m.i++
	return sortedEntry{key: m.run.key(ref), value: m.run.value(ref), flen: int(ref.flen)}, nil
}

type spillSource struct {
	r   *bufio.Reader
	buf []byte
}

func (f *spillSource) next() (sortedEntry, error) {
	var lens [3]uint64
	for i := range lens {
		n, err := binary.ReadUvarint(f.r)
		if err != nil {
			if i == 0 && errors.Is(err, io.EOF) {
				return sortedEntry{}, io.EOF
			}
			return sortedEntry{}, fmt.Errorf("index build: read spill: %w", err)
		}
		lens[i] = n
	}
	flen, klen, vlen := lens[0], lens[1], lens[2]
	if flen > klen {
		return sortedEntry{}, errors.New("index build: read spill: corrupt record")
	}
	f.buf = slices.Grow(f.buf[:0], int(klen+vlen))[:klen+vlen]
	if _, err := io.ReadFull(f.r, f.buf); err != nil {
		return sortedEntry{}, fmt.Errorf("index build: read spill: %w", err)
	}
	return sortedEntry{key: f.buf[:klen], value: f.buf[klen:], flen: int(flen)}, nil
}

// finish sorts the run the sorter holds in memory, which is merged as it
// is rather than spilled.
func (s *entrySorter) finish() { s.run.sort() }

// mergeSorted yields the entries of every finished sorter's runs in
// entry-key order.
func mergeSorted(sorters []*entrySorter, yield func(sortedEntry) error) error {
	var h sourceHeap
	for _, s := range sorters {
		h.add(&memorySource{run: &s.run})
		for _, f := range s.spills {
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("index build: read spill: %w", err)
			}
			h.add(&spillSource{r: bufio.NewReaderSize(f, 1<<20)})
		}
	}
	if err := h.start(); err != nil {
		return err
	}
	for h.Len() > 0 {
		top := h.items[0]
		if err := yield(top.cur); err != nil {
			return err
		}
		cur, err := top.src.next()
		if errors.Is(err, io.EOF) {
			heap.Pop(&h)
			continue
		}
		if err != nil {
			return err
		}
		top.cur = cur
		heap.Fix(&h, 0)
	}
	return nil
}

type heapItem struct {
	src entrySource
	cur sortedEntry
}

// sourceHeap orders the runs being merged by their current entry.
type sourceHeap struct{ items []*heapItem }

func (h *sourceHeap) add(src entrySource) { h.items = append(h.items, &heapItem{src: src}) }

// start reads each run's first entry, drops empty runs and heapifies.
func (h *sourceHeap) start() error {
	live := h.items[:0]
	for _, it := range h.items {
		cur, err := it.src.next()
		if errors.Is(err, io.EOF) {
			continue
		}
		if err != nil {
			return err
		}
		it.cur = cur
		live = append(live, it)
	}
	h.items = live
	heap.Init(h)
	return nil
}

func (h *sourceHeap) Len() int { return len(h.items) }
func (h *sourceHeap) Less(i, j int) bool {
	return bytes.Compare(h.items[i].cur.key, h.items[j].cur.key) < 0
}
func (h *sourceHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *sourceHeap) Push(x any)    { h.items = append(h.items, x.(*heapItem)) }
func (h *sourceHeap) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}

// spillPath names the spill directory of a data directory.
func spillPath(dataDir string) string { return filepath.Join(dataDir, spillDirName) }
