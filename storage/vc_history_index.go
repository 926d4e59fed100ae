package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"

	"github.com/dumbodb/dumbodb/internal/formatversion"
)

// The history index (docs/format/history-index.md): per commit, a
// summary of what it changed against its first parent, so that history
// queries on a collection or a document walk summaries in memory and
// read only the commits that touched it. Summaries are computed the
// first time a query meets a commit, and appended to history.idx.

const (
	historyIndexFile = "history.idx"
	// summaryMaxKeys: past this many changed documents, a collection's
	// summary says only that it changed.
	summaryMaxKeys = 1024
)

// commitSummary is what a commit changed against its first parent.
type commitSummary struct {
	height  uint64
	at      int64 // the commit's user timestamp, Unix milliseconds
	parents []hash.Hash
	colls   map[string]collectionChange
}

// collectionChange is one changed collection of a summary: the hashes of
// its changed documents' keys, sorted, or whole (made, dropped, or too
// many to list).
type collectionChange struct {
	whole bool
	keys  []uint64
}

// touches reports whether the commit may have changed the document with
// key hash kh of coll (whole: it must be looked up to know).
func (s *commitSummary) touches(coll string, kh uint64) (touched, whole bool) {
	cc, ok := s.colls[coll]
	switch {
	case !ok:
		return false, false
	case cc.whole:
		return true, true
	}
	_, found := slices.BinarySearch(cc.keys, kh)
	return found, false
}

func keyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// historyIndex is a database's summaries: loaded from its file at first
// use, appended to as queries compute more.
type historyIndex struct {
	mu      sync.Mutex
	loaded  bool
	byAddr  map[hash.Hash]*commitSummary
	pending []byte // records computed and not yet written
	// computed counts the summaries computed since the index was loaded
	// (the tests' window on whether the file served a query).
	computed int
	// parentAddr and parentState are the first parent's state the last
	// summary read: a walk summarises that parent next, and reads it once.
	parentAddr  hash.Hash
	parentState *rootState
}

// pendingMax bounds the records a long walk keeps before writing them.
const pendingMax = 1 << 20

// summary is a commit's summary, computed and added to the index if it
// is not there yet.
func (d *Database) summary(ctx context.Context, addr hash.Hash) (*commitSummary, error) {
	ix := &d.historyIdx
	if s := ix.lookup(d, addr); s != nil {
		return s, nil
	}
	c, err := datas.LoadCommitAddr(ctx, d.vs, addr)
	if err != nil {
		return nil, err
	}
	s, err := d.summarize(ctx, c)
	if err != nil {
		return nil, err
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if old := ix.byAddr[addr]; old != nil {
		return old, nil // another query computed it meanwhile
	}
	ix.byAddr[addr] = s
	ix.pending = appendSummaryRecord(ix.pending, addr, s)
	ix.computed++
	if len(ix.pending) >= pendingMax {
		d.writePendingLocked()
	}
	return s, nil
}

// lookup is a commit's summary in the index (nil: none yet), loading
// the file at first use.
func (ix *historyIndex) lookup(d *Database, addr hash.Hash) *commitSummary {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.loaded {
		ix.load(d)
	}
	return ix.byAddr[addr]
}

// stateOfCommit is a commit's state, from the last summary's first
// parent when it is that commit.
func (d *Database) stateOfCommit(ctx context.Context, c *datas.Commit) (*rootState, error) {
	ix := &d.historyIdx
	ix.mu.Lock()
	st := ix.parentState
	if ix.parentAddr != c.Addr() {
		st = nil
	}
	ix.mu.Unlock()
	if st != nil {
		return st, nil
	}
	return d.commitState(ctx, c)
}

// summarize computes what commit c changed against its first parent.
func (d *Database) summarize(ctx context.Context, c *datas.Commit) (*commitSummary, error) {
	parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
	if err != nil {
		return nil, err
	}
	s := &commitSummary{height: c.Height(), at: commitTime(ctx, c), colls: map[string]collectionChange{}}
	for _, p := range parents {
		s.parents = append(s.parents, p.Addr())
	}
	cur, err := d.stateOfCommit(ctx, c)
	if err != nil {
		return nil, err
	}
	prev := &rootState{}
	if len(parents) > 0 {
		if prev, err = d.commitState(ctx, parents[0]); err != nil {
			return nil, err
		}
		d.historyIdx.mu.Lock()
		d.historyIdx.parentAddr, d.historyIdx.parentState = parents[0].Addr(), prev
		d.historyIdx.mu.Unlock()
	}
	for _, name := range unionNames(prev, cur) {
		cc, changed, err := d.collectionChangeOf(ctx, prev, cur, name)
		if err != nil {
			return nil, err
		}
		if changed {
			s.colls[name] = cc
		}
	}
	return s, nil
}

// errTooManyKeys stops a diff whose keys a summary will not list.
var errTooManyKeys = errors.New("more changed documents than a summary lists")

// collectionChangeOf is what changed of one collection between two
// committed states.
func (d *Database) collectionChangeOf(ctx context.Context, prev, cur *rootState, name string) (collectionChange, bool, error) {
	a, aok := prev.colls.lookup(name)
	b, bok := cur.colls.lookup(name)
	switch {
	case aok != bok:
		return collectionChange{whole: true}, true, nil
	case a.base.HashOf() == b.base.HashOf():
		return collectionChange{}, false, nil
	}
	var keys []uint64
	err := prolly.DiffMaps(ctx, a.base, b.base, false, func(_ context.Context, df tree.Diff) error {
		if len(keys) == summaryMaxKeys {
			return errTooManyKeys
		}
		keys = append(keys, keyHash(keyBytes(val.Tuple(df.Key))))
		return nil
	})
	switch {
	case errors.Is(err, errTooManyKeys):
		return collectionChange{whole: true}, true, nil
	case !errors.Is(err, io.EOF): // DiffMaps ends with io.EOF
		return collectionChange{}, false, err
	}
	slices.Sort(keys)
	return collectionChange{keys: keys}, true, nil
}

// flushHistoryIndex appends the summaries computed since the last flush
// to the file; while the data directory is frozen they wait for a later
// flush. The index is derived data: it is not synced, and a failed write
// only leaves the summaries to be computed again after a restart.
func (d *Database) flushHistoryIndex() {
	ix := &d.historyIdx
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.parentAddr, ix.parentState = hash.Hash{}, nil // a query's walk is over
	d.writePendingLocked()
}

// writePendingLocked writes the pending records; the caller holds the
// index's lock.
func (d *Database) writePendingLocked() {
	ix := &d.historyIdx
	if len(ix.pending) == 0 || d.dropping.Load() || d.engine.gate.closedNow() {
		return
	}
	path := filepath.Join(d.dir, historyIndexFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		err = writeHistoryRecords(f, ix.pending)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("file", path).Msg("could not write the history index; its summaries will be computed again")
	}
	ix.pending = ix.pending[:0]
}

// writeHistoryRecords appends records, after the header if the file is
// empty.
func writeHistoryRecords(f *os.File, records []byte) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		h := formatversion.HistoryIndex.Header()
		records = append(h[:], records...)
	}
	_, err = f.Write(records)
	return err
}

// load reads the index file: every whole record up to the first that is
// torn or damaged, whose tail is then cut off. A file that cannot be read
// is removed, and the index starts empty. While the data directory is
// frozen the file is left as it is.
func (ix *historyIndex) load(d *Database) {
	ix.loaded, ix.byAddr = true, map[hash.Hash]*commitSummary{}
	path := filepath.Join(d.dir, historyIndexFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		_, err = formatversion.HistoryIndex.ReadHeader(data)
	}
	frozen := d.engine.gate.closedNow()
	if err != nil {
		d.log.Info().Str("c", "STORAGE").Err(err).Str("file", path).Msg("setting the history index aside; it is built again")
		if !frozen {
			os.Remove(path)
		}
		return
	}
	good := ix.parse(data[formatversion.HeaderSize:]) + formatversion.HeaderSize
	if good < len(data) && !frozen {
		os.Truncate(path, int64(good))
	}
}

// parse adds the records of data and returns the length of its whole,
// sound records.
func (ix *historyIndex) parse(data []byte) int {
	off := 0
	for len(data)-off >= 8 {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		sum := binary.LittleEndian.Uint32(data[off+4:])
		body := data[off+8:]
		if n > len(body) || crc32.Checksum(body[:n], castagnoli) != sum {
			break
		}
		addr, s, err := decodeSummary(body[:n])
		if err != nil {
			break
		}
		ix.byAddr[addr] = s
		off += 8 + n
	}
	return off
}

// appendSummaryRecord appends a commit's record: length, CRC, body.
func appendSummaryRecord(dst []byte, addr hash.Hash, s *commitSummary) []byte {
	body := encodeSummary(addr, s)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(body)))
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(body, castagnoli))
	return append(dst, body...)
}

func encodeSummary(addr hash.Hash, s *commitSummary) []byte {
	b := append([]byte(nil), addr[:]...)
	b = binary.AppendUvarint(b, s.height)
	b = binary.AppendVarint(b, s.at)
	b = binary.AppendUvarint(b, uint64(len(s.parents)))
	for _, p := range s.parents {
		b = append(b, p[:]...)
	}
	names := make([]string, 0, len(s.colls))
	for name := range s.colls {
		names = append(names, name)
	}
	slices.Sort(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		cc := s.colls[name]
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		if cc.whole {
			b = append(b, 1)
			continue
		}
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(len(cc.keys)))
		for _, k := range cc.keys {
			b = binary.LittleEndian.AppendUint64(b, k)
		}
	}
	return b
}

// summaryReader reads a record's body, remembering its first error.
type summaryReader struct {
	b   []byte
	err error
}

func (r *summaryReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *summaryReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *summaryReader) bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail()
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *summaryReader) hash() hash.Hash {
	var h hash.Hash
	copy(h[:], r.bytes(hash.ByteLen))
	return h
}

func (r *summaryReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("history index: a record ends early")
	}
	r.b = nil
}

func decodeSummary(body []byte) (hash.Hash, *commitSummary, error) {
	r := &summaryReader{b: body}
	addr := r.hash()
	s := &commitSummary{height: r.uvarint(), at: r.varint(), colls: map[string]collectionChange{}}
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		s.parents = append(s.parents, r.hash())
	}
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		name := string(r.bytes(r.uvarint()))
		kind := r.bytes(1)
		if r.err != nil {
			break
		}
		if kind[0] == 1 {
			s.colls[name] = collectionChange{whole: true}
			continue
		}
		count := r.uvarint()
		if count > uint64(len(r.b))/8 {
			r.fail()
			break
		}
		raw := r.bytes(count * 8)
		cc := collectionChange{keys: make([]uint64, 0, len(raw)/8)}
		for i := 0; i+8 <= len(raw); i += 8 {
			cc.keys = append(cc.keys, binary.LittleEndian.Uint64(raw[i:]))
		}
		s.colls[name] = cc
	}
	return addr, s, r.err
}
