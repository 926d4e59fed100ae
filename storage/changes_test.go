package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Tests of the change log (changes.go) and of how writes, transactions,
// crash recovery and version-control operations fill it
// (changes_capture.go).

// csD is a bson.D of key, value pairs.
func csD(kv ...any) bson.D {
	d := bson.D{}
	for i := 0; i+1 < len(kv); i += 2 {
		d = append(d, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return d
}

// csDoc is the BSON document of key, value pairs.
func csDoc(kv ...any) bsoncore.Document {
	b, err := bson.Marshal(csD(kv...))
	if err != nil {
		panic(err)
	}
	return b
}

// csString shows a document for a failure message (nil: "<nil>").
func csString(d bsoncore.Document) string {
	if d == nil {
		return "<nil>"
	}
	return d.String()
}

// readChanges reads the log from seq to its end.
func readChanges(t testing.TB, l *ChangeLog, seq uint64) []ChangeEntry {
	t.Helper()
	r, err := l.Reader(seq)
	if err != nil {
		t.Fatalf("reader at %d: %v", seq, err)
	}
	var out []ChangeEntry
	for {
		e, ok, err := r.Next()
		if err != nil {
			t.Fatalf("read at %d: %v", r.Seq(), err)
		}
		if !ok {
			return out
		}
		if e.Seq != seq+uint64(len(out)) {
			t.Fatalf("entry %d read as sequence number %d", seq+uint64(len(out)), e.Seq)
		}
		out = append(out, e)
	}
}

// diffEvent describes how got differs from want ("" when it does not).
func diffEvent(got, want ChangeEvent) string {
	switch {
	case got.Op != want.Op:
		return fmt.Sprintf("op %q, want %q", got.Op, want.Op)
	case got.Coll != want.Coll:
		return fmt.Sprintf("%s: collection %q, want %q", want.Op, got.Coll, want.Coll)
	case got.UUID != want.UUID:
		return fmt.Sprintf("%s: uuid %x, want %x", want.Op, got.UUID, want.UUID)
	case got.To != want.To:
		return fmt.Sprintf("%s: to %q, want %q", want.Op, got.To, want.To)
	}
	for _, f := range []struct {
		name      string
		got, want bsoncore.Document
	}{{"documentKey", got.Key, want.Key}, {"doc", got.Doc, want.Doc}, {"pre", got.Pre, want.Pre},
		{"updateDescription", got.Update, want.Update}, {"operationDescription", got.Desc, want.Desc},
		{"stateBeforeChange", got.Before, want.Before}} {
		if (f.got == nil) != (f.want == nil) || !bytes.Equal(f.got, f.want) {
			return fmt.Sprintf("%s %s: %s, want %s", want.Op, f.name, csString(f.got), csString(f.want))
		}
	}
	return ""
}

// diffEntry describes how got differs from want ("" when it does not);
// Seq and Wall are compared only when exact is set.
func diffEntry(got, want ChangeEntry, exact bool) string {
	switch {
	case exact && got.Seq != want.Seq:
		return fmt.Sprintf("seq %d, want %d", got.Seq, want.Seq)
	case exact && !got.Wall.Equal(want.Wall):
		return fmt.Sprintf("wall %v, want %v", got.Wall, want.Wall)
	case got.At != want.At:
		return fmt.Sprintf("at %x, want %x", got.At, want.At)
	case got.DB != want.DB || got.Branch != want.Branch:
		return fmt.Sprintf("%s@%s, want %s@%s", got.DB, got.Branch, want.DB, want.Branch)
	case got.LSN != want.LSN:
		return fmt.Sprintf("lsn %d, want %d", got.LSN, want.LSN)
	case (got.Txn == nil) != (want.Txn == nil):
		return fmt.Sprintf("txn %+v, want %+v", got.Txn, want.Txn)
	case got.Txn != nil && *got.Txn != *want.Txn:
		return fmt.Sprintf("txn %+v, want %+v", *got.Txn, *want.Txn)
	case len(got.Events) != len(want.Events):
		return fmt.Sprintf("%d events %v, want %d %v", len(got.Events), opsOf(got), len(want.Events), opsOf(want))
	}
	for i := range want.Events {
		if d := diffEvent(got.Events[i], want.Events[i]); d != "" {
			return fmt.Sprintf("event %d: %s", i, d)
		}
	}
	return ""
}

func opsOf(e ChangeEntry) []string {
	var ops []string
	for _, ev := range e.Events {
		ops = append(ops, ev.Op+" "+ev.Coll)
	}
	return ops
}

// sampleWall is the wall time of the sample entries: recent, so that the
// default retention keeps them.
var sampleWall = time.UnixMilli(time.Now().Add(-time.Minute).UnixMilli())

// sampleEntry is an entry using every field; pad makes it bigger.
func sampleEntry(i, pad int) ChangeEntry {
	e := ChangeEntry{
		At:     uint64(1000+i)<<32 | uint64(i%3+1),
		Wall:   sampleWall.Add(time.Duration(i) * time.Millisecond),
		DB:     []string{"a", "b"}[i%2],
		Branch: "main",
		LSN:    uint64(i/2 + 1),
	}
	if i%3 == 0 {
		e.Branch = "feature"
	}
	if i%4 == 1 {
		e.Txn = &ChangeTxn{Session: SessionKey{ID: [16]byte{byte(i), 2}, UID: [32]byte{3, byte(i)}}, Number: int64(i) * 10}
	}
	uuid := [16]byte{0xaa, byte(i), 0x40}
	key := csDoc("_id", int32(i))
	before := csDoc("_id", int32(i), "v", "old")
	after := csDoc("_id", int32(i), "v", "new", "pad", strings.Repeat("x", pad))
	e.Events = []ChangeEvent{
		{Op: "insert", Coll: "c", UUID: uuid, Key: key, Doc: after},
		{Op: "update", Coll: "c", UUID: uuid, Key: key, Doc: after, Pre: before, Update: UpdateDescription(before, after)},
		{Op: "delete", Coll: "c", UUID: uuid, Key: key, Pre: before},
		{Op: "rename", Coll: "c", UUID: uuid, To: "d", Desc: csDoc("dropTarget", bson.Binary{Subtype: 4, Data: make([]byte, 16)})},
		{Op: "modify", Coll: "d", UUID: uuid, Desc: csDoc("validationLevel", "off"),
			Before: csDoc("collectionOptions", csD("uuid", bson.Binary{Subtype: 4, Data: uuid[:]}))},
	}
	if i%5 == 4 {
		e.Events = []ChangeEvent{{Op: "dumboCommit", Desc: csDoc("commitId", fmt.Sprint(i))}}
		e.LSN = 0
	}
	return e
}

func sampleEntries(from, n, pad int) []ChangeEntry {
	var out []ChangeEntry
	for i := from; i < from+n; i++ {
		out = append(out, sampleEntry(i, pad))
	}
	return out
}

// checkEntries compares entries read with the ones appended.
func checkEntries(t *testing.T, got, want []ChangeEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if d := diffEntry(got[i], want[i], true); d != "" {
			t.Fatalf("entry %d (seq %d): %s", i, want[i].Seq, d)
		}
	}
}

func openTestChangeLog(t *testing.T, dir string) *ChangeLog {
	t.Helper()
	l, err := openChangeLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// abandonChangeLog closes a log's files without syncing it, as a crash
// would leave them (the data written is in the files; the mark is not
// rewritten).
func abandonChangeLog(l *ChangeLog) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segs {
		s.f.Close()
	}
	l.segs = nil
}

func appendChanges(t *testing.T, l *ChangeLog, entries []ChangeEntry) {
	t.Helper()
	if err := l.append(entries); err != nil {
		t.Fatal(err)
	}
}

// segFiles lists a change log's segment files, oldest first.
func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.chg"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	return paths
}

func TestChangeLogAppendAndRead(t *testing.T) {
	dir := t.TempDir()
	l := openTestChangeLog(t, dir)
	defer l.Close()
	if st := l.Stats(); st.First != 1 || st.Next != 1 || st.Segments != 0 || st.FirstAt != 0 {
		t.Fatalf("empty log: %+v", st)
	}
	if got := readChanges(t, l, 1); len(got) != 0 {
		t.Fatalf("empty log read %d entries", len(got))
	}
	wait := l.Wait()
	want := sampleEntries(0, 3, 0)
	appendChanges(t, l, want)
	select {
	case <-wait:
	default:
		t.Fatal("Wait's channel not closed by an append")
	}
	for i := 3; i < 10; i++ {
		e := sampleEntries(i, 1, 0)
		appendChanges(t, l, e)
		want = append(want, e...)
	}
	for i, e := range want {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d got sequence number %d", i, e.Seq)
		}
	}
	checkEntries(t, readChanges(t, l, 1), want)
	for seq := uint64(1); seq <= 11; seq++ {
		checkEntries(t, readChanges(t, l, seq), want[seq-1:])
	}
	if st := l.Stats(); st.First != 1 || st.Next != 11 || st.Segments != 1 || st.FirstAt != want[0].At {
		t.Fatalf("stats %+v", st)
	}
	// A reader at 0 starts at the next entry appended, and sees it.
	r, err := l.Reader(0)
	if err != nil || r.Seq() != 11 {
		t.Fatalf("Reader(0): seq %d, %v", r.Seq(), err)
	}
	if _, ok, err := r.Next(); ok || err != nil {
		t.Fatalf("Reader(0) at the end: ok %v, %v", ok, err)
	}
	more := sampleEntries(10, 1, 0)
	appendChanges(t, l, more)
	if e, ok, err := r.Next(); !ok || err != nil || diffEntry(e, more[0], true) != "" {
		t.Fatalf("Reader(0) after an append: ok %v, %v, %s", ok, err, diffEntry(e, more[0], true))
	}
	if _, err := l.Reader(13); !errors.Is(err, ErrChangeHistoryLost) {
		t.Fatalf("reader past the end: %v", err)
	}
}

// TestChangeLogStartsWritebackAsItGoes: once the active segment holds a
// megabyte not yet handed to the disk, an append starts its writeback, so
// that the sync when the segment fills waits for little; the entries
// still read back whole.
func TestChangeLogStartsWritebackAsItGoes(t *testing.T) {
	l := openTestChangeLog(t, t.TempDir())
	defer l.Close()
	var want []ChangeEntry
	for i := 0; i < 300; i += 10 {
		e := sampleEntries(i, 10, 10000)
		appendChanges(t, l, e)
		want = append(want, e...)
	}
	seg := l.segs[len(l.segs)-1]
	if seg.size < 2*changeWritebackBytes || seg.size-seg.written >= changeWritebackBytes {
		t.Fatalf("segment of %d bytes, writeback started up to %d", seg.size, seg.written)
	}
	checkEntries(t, readChanges(t, l, 1), want)
}

// TestChangeLogSegments: entries rotate into several segments (one of their
// own for an entry bigger than the segment size), read back across them
// from any position, and all survive a reopen, which continues the
// sequence numbers.
func TestChangeLogSegments(t *testing.T) {
	dir := t.TempDir()
	l := openTestChangeLog(t, dir)
	l.segSize = 2048
	var want []ChangeEntry
	for i := 0; i < 40; i += 4 {
		e := sampleEntries(i, 4, 100)
		appendChanges(t, l, e)
		want = append(want, e...)
	}
	big := sampleEntries(40, 1, 5000)
	appendChanges(t, l, big)
	want = append(want, big...)
	after := sampleEntries(41, 3, 100)
	appendChanges(t, l, after)
	want = append(want, after...)

	files := segFiles(t, dir)
	if len(files) < 5 || l.Stats().Segments != len(files) {
		t.Fatalf("%d segment files (stats %+v)", len(files), l.Stats())
	}
	for _, f := range files {
		st, _ := os.Stat(f)
		if name := filepath.Base(f); name == fmt.Sprintf("%020d.chg", big[0].Seq) {
			if st.Size() < 5000 {
				t.Fatalf("the big entry's segment holds %d bytes", st.Size())
			}
			continue
		}
		if st.Size() > 2048 {
			t.Fatalf("segment %s holds %d bytes, more than the segment size", f, st.Size())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.chg", big[0].Seq))); err != nil {
		t.Fatalf("no segment starts at the big entry: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("%020d.chg", big[0].Seq+1))); err != nil {
		t.Fatalf("the entry after the big one does not start a segment: %v", err)
	}
	for seq := uint64(1); seq <= uint64(len(want))+1; seq++ {
		checkEntries(t, readChanges(t, l, seq), want[seq-1:])
	}
	// One reader reading while entries are appended crosses segments.
	r, _ := l.Reader(uint64(len(want)) + 1)
	for i := 0; i < 20; i++ {
		e := sampleEntries(50+i, 1, 300)
		appendChanges(t, l, e)
		want = append(want, e...)
		got, ok, err := r.Next()
		if !ok || err != nil || diffEntry(got, e[0], true) != "" {
			t.Fatalf("following reader at %d: ok %v %v %s", e[0].Seq, ok, err, diffEntry(got, e[0], true))
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openTestChangeLog(t, dir)
	defer l.Close()
	checkEntries(t, readChanges(t, l, 1), want)
	st := l.Stats()
	if st.First != 1 || st.Next != uint64(len(want))+1 || st.Segments != len(segFiles(t, dir)) || st.FirstAt != want[0].At {
		t.Fatalf("after reopen: %+v", st)
	}
	next := sampleEntries(70, 2, 0)
	appendChanges(t, l, next)
	if next[0].Seq != uint64(len(want))+1 {
		t.Fatalf("after reopen the next entry got %d, want %d", next[0].Seq, len(want)+1)
	}
	want = append(want, next...)
	checkEntries(t, readChanges(t, l, 1), want)
}

// TestChangeLogTornTail: after a crash the last segment may end in part of
// an entry, a damaged one or garbage; reopening cuts it back to its last
// valid entry and appends continue from there.
func TestChangeLogTornTail(t *testing.T) {
	for _, c := range []struct {
		name string
		tear func(t *testing.T, path string, size int64)
	}{
		{"truncated", func(t *testing.T, path string, size int64) { os.Truncate(path, size-3) }},
		{"header only", func(t *testing.T, path string, size int64) {
			os.Truncate(path, size-int64(len(sampleEntryRecord()))+10)
		}},
		{"bad crc", func(t *testing.T, path string, size int64) { flipByte(t, path, size-20) }},
		{"garbage after", func(t *testing.T, path string, size int64) {
			f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			f.Write([]byte{7, 0, 0, 0, 1, 2, 3})
			f.Close()
		}},
		{"zeros after", func(t *testing.T, path string, size int64) { os.Truncate(path, size+4096) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l := openTestChangeLog(t, dir)
			want := sampleEntries(0, 5, 0)
			appendChanges(t, l, want)
			l.Close()
			files := segFiles(t, dir)
			last := files[len(files)-1]
			st, _ := os.Stat(last)
			c.tear(t, last, st.Size())
			keep := want
			if c.name != "garbage after" && c.name != "zeros after" {
				keep = want[:4] // the last entry is torn
			}

			l = openTestChangeLog(t, dir)
			checkEntries(t, readChanges(t, l, 1), keep)
			if n := l.Stats().Next; n != uint64(len(keep))+1 {
				t.Fatalf("next %d after the cut, want %d", n, len(keep)+1)
			}
			if st, _ := os.Stat(last); st.Size() != l.Stats().Bytes {
				t.Fatalf("segment of %d bytes, the log counts %d", st.Size(), l.Stats().Bytes)
			}
			more := sampleEntries(10, 2, 0)
			appendChanges(t, l, more)
			keep = append(keep, more...)
			l.Close()
			l = openTestChangeLog(t, dir)
			defer l.Close()
			checkEntries(t, readChanges(t, l, 1), keep)
		})
	}
}

// sampleEntryRecord is the encoded record of the last entry
// TestChangeLogTornTail appends.
func sampleEntryRecord() []byte {
	e := sampleEntry(4, 0)
	e.Seq = 5
	return appendChangeRecord(nil, e)
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0xff
	f.WriteAt(b, off)
}

// TestChangeLogTornNewSegment: a crash just after a rotation can leave the
// new segment without its header (created, nothing of it on disk). The
// log still opens, keeps every entry of the earlier segments and goes on
// with the sequence number the torn segment was to start with.
func TestChangeLogTornNewSegment(t *testing.T) {
	for _, size := range []int64{0, 7, 12} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			l := openTestChangeLog(t, dir)
			l.segSize = 1024
			want := sampleEntries(0, 12, 100)
			appendChanges(t, l, want)
			files := segFiles(t, dir)
			if len(files) < 2 {
				t.Fatalf("%d segments", len(files))
			}
			abandonChangeLog(l)
			// The last segment loses its entries and part of its header.
			last := files[len(files)-1]
			first, _ := segFirst(last)
			os.Truncate(last, size)
			want = want[:first-1]

			l, err := openChangeLog(dir)
			if err != nil {
				t.Fatalf("reopen after a torn new segment: %v", err)
			}
			checkEntries(t, readChanges(t, l, 1), want)
			more := sampleEntries(20, 2, 0)
			appendChanges(t, l, more)
			if more[0].Seq != first {
				t.Fatalf("next entry got %d, want %d", more[0].Seq, first)
			}
			want = append(want, more...)
			l.Close()
			l = openTestChangeLog(t, dir)
			defer l.Close()
			checkEntries(t, readChanges(t, l, 1), want)
		})
	}
}

func segFirst(path string) (uint64, error) {
	var n uint64
	_, err := fmt.Sscanf(strings.TrimSuffix(filepath.Base(path), ".chg"), "%d", &n)
	return n, err
}

// readMarkFile decodes the sync mark: s and the per-database LSNs.
func readMarkFile(t *testing.T, dir string) (uint64, map[string]uint64) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "synced"))
	if err != nil {
		t.Fatal(err)
	}
	doc := bsoncore.Document(data)
	dbs := map[string]uint64{}
	els, _ := doc.Lookup("dbs").Document().Elements()
	for _, el := range els {
		dbs[el.Key()] = uint64(el.Value().Int64())
	}
	return uint64(doc.Lookup("s").Int64()), dbs
}

func lsnEntry(db string, lsn uint64) ChangeEntry {
	return ChangeEntry{At: lsn << 32, Wall: time.Now(), DB: db, Branch: "main", LSN: lsn,
		Events: []ChangeEvent{{Op: "insert", Coll: "c", Key: csDoc("_id", int64(lsn))}}}
}

// TestChangeLogSyncMark: the sync mark holds the sequence number synced
// and each database's highest LSN; after a crash the entries written
// after the last sync raise those LSNs further, and a dropDatabase entry
// forgets its database's.
func TestChangeLogSyncMark(t *testing.T) {
	dir := t.TempDir()
	l := openTestChangeLog(t, dir)
	appendChanges(t, l, []ChangeEntry{lsnEntry("a", 1), lsnEntry("a", 2), lsnEntry("b", 1), lsnEntry("a", 3), lsnEntry("b", 2)})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if s, dbs := readMarkFile(t, dir); s != 6 || dbs["a"] != 3 || dbs["b"] != 2 || len(dbs) != 2 {
		t.Fatalf("mark s %d dbs %v", s, dbs)
	}
	// Written after the sync: a's 4 and 5, and an entry not from the log.
	appendChanges(t, l, []ChangeEntry{lsnEntry("a", 4), {DB: "b", Branch: "main", Events: []ChangeEvent{{Op: "dumboCommit"}}}, lsnEntry("a", 5)})
	if l.LastLSN("a") != 5 || l.LastLSN("b") != 2 {
		t.Fatalf("live: a %d b %d", l.LastLSN("a"), l.LastLSN("b"))
	}
	abandonChangeLog(l)

	l = openTestChangeLog(t, dir)
	if l.LastLSN("a") != 5 || l.LastLSN("b") != 2 || l.LastLSN("c") != 0 {
		t.Fatalf("after a crash: a %d b %d c %d, want 5 2 0", l.LastLSN("a"), l.LastLSN("b"), l.LastLSN("c"))
	}
	if n := l.Stats().Next; n != 9 {
		t.Fatalf("next %d after a crash, want 9", n)
	}
	// A dropDatabase entry after the sync forgets a (a new database of
	// that name starts its log at 1 again).
	appendChanges(t, l, []ChangeEntry{{DB: "a", Branch: "main", Events: []ChangeEvent{{Op: "drop", Coll: "c"}}},
		{DB: "a", Branch: "main", Events: []ChangeEvent{{Op: "dropDatabase"}}}})
	if l.LastLSN("a") != 0 {
		t.Fatalf("after dropDatabase: a %d", l.LastLSN("a"))
	}
	abandonChangeLog(l)
	l = openTestChangeLog(t, dir)
	if l.LastLSN("a") != 0 || l.LastLSN("b") != 2 {
		t.Fatalf("dropDatabase after the sync, then a crash: a %d b %d, want 0 2", l.LastLSN("a"), l.LastLSN("b"))
	}
	appendChanges(t, l, []ChangeEntry{lsnEntry("a", 1), lsnEntry("b", 3)})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if s, dbs := readMarkFile(t, dir); s != 13 || dbs["a"] != 1 || dbs["b"] != 3 {
		t.Fatalf("mark after close: s %d dbs %v", s, dbs)
	}
	// A dropDatabase entry before the sync: the mark no longer names it.
	l = openTestChangeLog(t, dir)
	appendChanges(t, l, []ChangeEntry{{DB: "b", Branch: "main", Events: []ChangeEvent{{Op: "dropDatabase"}}}})
	l.Sync()
	if _, dbs := readMarkFile(t, dir); len(dbs) != 1 || dbs["a"] != 1 {
		t.Fatalf("mark after b's drop: %v", dbs)
	}
	// An entry of a lower LSN (another branch publishing late) does not
	// lower the database's LSN.
	appendChanges(t, l, []ChangeEntry{lsnEntry("a", 7), lsnEntry("a", 6)})
	abandonChangeLog(l)
	l = openTestChangeLog(t, dir)
	defer l.Close()
	if l.LastLSN("a") != 7 || l.LastLSN("b") != 0 {
		t.Fatalf("a %d b %d, want 7 0", l.LastLSN("a"), l.LastLSN("b"))
	}
}

// TestChangeLogRetention: whole segments are removed, oldest first, beyond
// the bytes or the age kept, never the active one; readers below the first
// kept entry get ErrChangeHistoryLost.
func TestChangeLogRetention(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		dir := t.TempDir()
		l := openTestChangeLog(t, dir)
		defer l.Close()
		l.segSize = 1024
		want := sampleEntries(0, 40, 100)
		appendChanges(t, l, want)
		before := l.Stats()
		if before.Segments < 6 {
			t.Fatalf("%d segments", before.Segments)
		}
		slow, _ := l.Reader(1) // positioned in the first segment
		if _, ok, err := slow.Next(); !ok || err != nil {
			t.Fatalf("first entry: %v %v", ok, err)
		}
		l.SetRetention(time.Hour, 3000)
		st := l.Stats()
		if st.Bytes > 3000 || st.Segments < 2 || st.Next != before.Next || st.First <= 1 {
			t.Fatalf("after keeping 3000 bytes: %+v (before %+v)", st, before)
		}
		if n := len(segFiles(t, dir)); n != st.Segments {
			t.Fatalf("%d segment files, %d segments kept", n, st.Segments)
		}
		if st.FirstAt != want[st.First-1].At {
			t.Fatalf("first kept at %x, want %x", st.FirstAt, want[st.First-1].At)
		}
		if _, err := l.Reader(st.First - 1); !errors.Is(err, ErrChangeHistoryLost) {
			t.Fatalf("reader below the first kept: %v", err)
		}
		if _, _, err := slow.Next(); !errors.Is(err, ErrChangeHistoryLost) {
			t.Fatalf("reader inside a removed segment: %v", err)
		}
		checkEntries(t, readChanges(t, l, st.First), want[st.First-1:])
		// Nothing fits: only the active segment stays, and keeps working.
		l.SetRetention(time.Hour, 1)
		st = l.Stats()
		if st.Segments != 1 || st.Next != before.Next {
			t.Fatalf("keeping 1 byte: %+v", st)
		}
		checkEntries(t, readChanges(t, l, st.First), want[st.First-1:])
		more := sampleEntries(40, 30, 100)
		appendChanges(t, l, more) // rotations trim as they go
		want = append(want, more...)
		st = l.Stats()
		if st.Segments != 1 || st.Next != uint64(len(want))+1 || len(segFiles(t, dir)) != 1 {
			t.Fatalf("appending while keeping 1 byte: %+v, %d files", st, len(segFiles(t, dir)))
		}
		checkEntries(t, readChanges(t, l, st.First), want[st.First-1:])
	})
	t.Run("time", func(t *testing.T) {
		dir := t.TempDir()
		l := openTestChangeLog(t, dir)
		defer l.Close()
		l.segSize = 1024
		now := time.UnixMilli(time.Now().UnixMilli())
		want := sampleEntries(0, 40, 100)
		for i := range want {
			want[i].Wall = now.Add(-3 * time.Hour) // old ...
			if i >= 25 {
				want[i].Wall = now // ... but for the last 15
			}
		}
		appendChanges(t, l, want)
		l.SetRetention(time.Hour, DefaultChangeRetentionBytes)
		st := l.Stats()
		if st.First == 1 || st.First > 26 {
			t.Fatalf("first kept %d, want the segment of entry 26 or the one before", st.First)
		}
		// Every segment removed held only old entries; the first kept
		// one holds a recent one.
		got := readChanges(t, l, st.First)
		checkEntries(t, got, want[st.First-1:])
		seg1 := l.segs[1].first
		if !got[seg1-st.First-1].Wall.Equal(now) {
			t.Fatalf("the first segment kept (entries %d to %d) holds no recent entry", st.First, seg1-1)
		}
		// All old: only the active segment stays.
		l.SetRetention(time.Nanosecond, DefaultChangeRetentionBytes)
		if st := l.Stats(); st.Segments != 1 || st.Next != 41 {
			t.Fatalf("all too old: %+v", st)
		}
	})
}

// TestChangeLogSeqAt: SeqAt is the first entry at or after a cluster
// time, across segments, after trimming and after a reopen.
func TestChangeLogSeqAt(t *testing.T) {
	dir := t.TempDir()
	l := openTestChangeLog(t, dir)
	l.segSize = 1024
	var want []ChangeEntry
	for i := 0; i < 40; i++ {
		e := sampleEntry(i, 100)
		e.At = uint64(10*(i+1)) << 32 // 10, 20, ... 400 seconds
		want = append(want, e)
	}
	appendChanges(t, l, want)
	check := func(l *ChangeLog) {
		t.Helper()
		first := l.Stats().First
		for sec := uint64(0); sec <= 420; sec += 5 {
			for _, at := range []uint64{sec << 32, sec<<32 | 1} {
				wantSeq := l.Stats().Next
				for _, e := range want[first-1:] {
					if e.At >= at {
						wantSeq = e.Seq
						break
					}
				}
				got, err := l.SeqAt(at)
				if err != nil || got != wantSeq {
					t.Fatalf("SeqAt(%x): %d %v, want %d", at, got, err, wantSeq)
				}
			}
		}
	}
	check(l)
	l.Close()
	l = openTestChangeLog(t, dir)
	defer l.Close()
	l.segSize = 1024
	check(l)
	l.Sync()
	l.SetRetention(time.Hour, 4000)
	if l.Stats().First == 1 {
		t.Fatal("nothing trimmed")
	}
	check(l)
	if got, _ := l.SeqAt(0); got != l.Stats().First {
		t.Fatalf("SeqAt(0) = %d after trimming, want the first kept %d", got, l.Stats().First)
	}
}

// TestChangeLogTrimKeepsLSNs: retention may remove entries written after
// the last sync; after a crash the log must still know their databases'
// LSNs, or recovery would write their entries again (a stream resuming
// past them would see them twice).
func TestChangeLogTrimKeepsLSNs(t *testing.T) {
	dir := t.TempDir()
	l := openTestChangeLog(t, dir)
	l.segSize = 1024
	l.SetRetention(time.Hour, 2048)
	appendChanges(t, l, []ChangeEntry{lsnEntry("a", 1), lsnEntry("b", 1)})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	for lsn := uint64(2); lsn <= 5; lsn++ {
		appendChanges(t, l, []ChangeEntry{lsnEntry("a", lsn)})
	}
	pad := strings.Repeat("p", 200)
	for lsn := uint64(2); lsn <= 40; lsn++ { // b's entries push a's out
		e := lsnEntry("b", lsn)
		e.Events[0].Doc = csDoc("_id", int64(lsn), "pad", pad)
		appendChanges(t, l, []ChangeEntry{e})
	}
	st := l.Stats()
	if st.First <= 7 {
		t.Fatalf("a's entries were not trimmed: %+v", st)
	}
	abandonChangeLog(l)
	l = openTestChangeLog(t, dir)
	defer l.Close()
	if l.LastLSN("a") != 5 || l.LastLSN("b") != 40 {
		t.Fatalf("after a crash: a %d b %d, want 5 40", l.LastLSN("a"), l.LastLSN("b"))
	}
}

// csEngine opens an engine on dir, closed at the end of the test, with a
// counting clock (so that entries get cluster times), and its database
// "db".
func csEngine(t *testing.T, dir string) (*Engine, *Database) {
	t.Helper()
	e := openEngine(t, dir, Options{})
	t.Cleanup(func() { e.Close() })
	testClock(e)
	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	return e, d
}

// writeOne runs one write on a branch and returns the one entry it added
// to the change log, there as soon as the write returns.
func writeOne(t *testing.T, e *Engine, d *Database, branch string, fn func(tx *Tx) error) ChangeEntry {
	t.Helper()
	seq := e.Changes().Stats().Next
	if err := d.WriteBranch(ctx, branch, fn); err != nil {
		t.Fatal(err)
	}
	got := readChanges(t, e.Changes(), seq)
	if len(got) != 1 {
		t.Fatalf("the write added %d entries, want 1", len(got))
	}
	return got[0]
}

// wantNoEntry fails if fn adds an entry to the change log.
func wantNoEntry(t *testing.T, e *Engine, what string, fn func()) {
	t.Helper()
	seq := e.Changes().Stats().Next
	fn()
	if got := readChanges(t, e.Changes(), seq); len(got) != 0 {
		t.Fatalf("%s added %d entries: %v", what, len(got), opsOf(got[0]))
	}
}

// checkEvents compares an entry's events with want.
func checkEvents(t *testing.T, what string, got ChangeEntry, want ...ChangeEvent) {
	t.Helper()
	if len(got.Events) != len(want) {
		t.Fatalf("%s: events %v, want %d", what, opsOf(got), len(want))
	}
	for i := range want {
		if d := diffEvent(got.Events[i], want[i]); d != "" {
			t.Fatalf("%s: event %d: %s", what, i, d)
		}
	}
}

var imagesOn = csDoc("changeStreamPreAndPostImages", csD("enabled", true))

// ifImages is doc when the collection keeps images, else nil.
func ifImages(images bool, doc bsoncore.Document) bsoncore.Document {
	if images {
		return doc
	}
	return nil
}

// TestChangeCaptureDocumentEvents: inserts, replaces, updates and deletes
// give their events, with images only where the collection keeps them.
func TestChangeCaptureDocumentEvents(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	var plain, img CollectionInfo
	start := time.Now().Add(-time.Second)
	ent := writeOne(t, e, d, DefaultBranch, func(tx *Tx) error {
		var err error
		if plain, err = tx.CreateCollection(ctx, "plain", nil); err != nil {
			return err
		}
		img, err = tx.CreateCollection(ctx, "img", imagesOn)
		return err
	})
	if ent.DB != "db" || ent.Branch != DefaultBranch || ent.LSN == 0 || ent.Txn != nil || ent.At <= 100 ||
		ent.Wall.Before(start) || ent.Wall.After(time.Now().Add(time.Second)) {
		t.Fatalf("entry %+v", ent)
	}
	checkEvents(t, "create", ent,
		ChangeEvent{Op: "create", Coll: "plain", UUID: plain.UUID, Desc: csDoc()},
		ChangeEvent{Op: "create", Coll: "img", UUID: img.UUID, Desc: imagesOn})
	last := ent
	next := func(what string, fn func(tx *Tx) error, want ...ChangeEvent) {
		t.Helper()
		ent := writeOne(t, e, d, DefaultBranch, fn)
		if ent.LSN <= last.LSN || ent.At <= last.At || ent.DB != "db" || ent.Branch != DefaultBranch || ent.Txn != nil {
			t.Fatalf("%s: entry (lsn %d at %d) after (lsn %d at %d): %+v", what, ent.LSN, ent.At, last.LSN, last.At, ent)
		}
		checkEvents(t, what, ent, want...)
		last = ent
	}
	for _, c := range []struct {
		info   CollectionInfo
		images bool
	}{{plain, false}, {img, true}} {
		name, uuid := c.info.Name, c.info.UUID
		key := csDoc("_id", int32(1))
		v1 := csDoc("_id", int32(1), "a", int32(1), "o", csD("x", "y"))
		v2 := csDoc("_id", int32(1), "a", int32(2), "b", "new")
		v3 := csDoc("_id", int32(1), "a", int32(3), "o", csD("x", "z"))
		next(name+" insert", func(tx *Tx) error { return tx.Insert(ctx, name, v1) },
			ChangeEvent{Op: "insert", Coll: name, UUID: uuid, Key: key, Doc: v1})
		next(name+" replace", func(tx *Tx) error { return tx.Replace(ctx, name, v2) },
			ChangeEvent{Op: "replace", Coll: name, UUID: uuid, Key: key, Doc: v2, Pre: ifImages(c.images, v1)})
		upd := csDoc("updatedFields", csD("a", int32(3), "o", csD("x", "z")), "removedFields", bson.A{"b"},
			"truncatedArrays", bson.A{}, "disambiguatedPaths", csD())
		if !bytes.Equal(UpdateDescription(v2, v3), upd) {
			t.Fatalf("update description %s, want %s", UpdateDescription(v2, v3), upd)
		}
		next(name+" update", func(tx *Tx) error { return tx.Update(ctx, name, v3) },
			ChangeEvent{Op: "update", Coll: name, UUID: uuid, Key: key, Update: upd,
				Doc: ifImages(c.images, v3), Pre: ifImages(c.images, v2)})
		next(name+" delete", func(tx *Tx) error { return tx.Delete(ctx, name, idValue(1)) },
			ChangeEvent{Op: "delete", Coll: name, UUID: uuid, Key: key, Pre: ifImages(c.images, v3)})
		// An update that finds no document inserts one (an upsert).
		next(name+" upsert", func(tx *Tx) error { return tx.Update(ctx, name, v1) },
			ChangeEvent{Op: "insert", Coll: name, UUID: uuid, Key: key, Doc: v1})
		// Several changes in one write: one entry, in order.
		d2, d2b := csDoc("_id", "two", "v", int32(1)), csDoc("_id", "two", "v", int32(2))
		key2 := csDoc("_id", "two")
		next(name+" several", func(tx *Tx) error {
			if err := tx.Insert(ctx, name, d2); err != nil {
				return err
			}
			if err := tx.Update(ctx, name, d2b); err != nil {
				return err
			}
			if err := tx.Delete(ctx, name, idValue(1)); err != nil {
				return err
			}
			return tx.Delete(ctx, name, d2.Lookup("_id"))
		},
			ChangeEvent{Op: "insert", Coll: name, UUID: uuid, Key: key2, Doc: d2},
			ChangeEvent{Op: "update", Coll: name, UUID: uuid, Key: key2, Update: UpdateDescription(d2, d2b),
				Doc: ifImages(c.images, d2b), Pre: ifImages(c.images, d2)},
			ChangeEvent{Op: "delete", Coll: name, UUID: uuid, Key: key, Pre: ifImages(c.images, v1)},
			ChangeEvent{Op: "delete", Coll: name, UUID: uuid, Key: key2, Pre: ifImages(c.images, d2b)})
	}
	// Writes that change nothing, or fail, add nothing.
	wantNoEntry(t, e, "a write changing nothing", func() {
		mustWrite(t, d, func(tx *Tx) error { return tx.Delete(ctx, "plain", idValue(99)) })
	})
	wantNoEntry(t, e, "a failed write", func() {
		err := d.Write(ctx, func(tx *Tx) error {
			tx.Insert(ctx, "plain", doc(5, "x"))
			return errors.New("no")
		})
		if err == nil {
			t.Fatal("the write did not fail")
		}
	})
	mustWrite(t, d, func(tx *Tx) error { return tx.Insert(ctx, "plain", doc(6, "x")) })
	wantNoEntry(t, e, "a duplicate insert", func() {
		if err := d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "plain", doc(6, "y")) }); !errors.Is(err, ErrDuplicateKey) {
			t.Fatalf("duplicate: %v", err)
		}
	})
}

// TestChangeCaptureCatalogEvents: create, drop, rename (naming the target
// it drops), createIndexes, dropIndexes and modify (of an index, or of the
// collection's options, with the options before).
func TestChangeCaptureCatalogEvents(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	var c, target CollectionInfo
	ent := writeOne(t, e, d, DefaultBranch, func(tx *Tx) error {
		var err error
		if c, err = tx.CreateCollection(ctx, "c", csDoc("validationLevel", "moderate")); err != nil {
			return err
		}
		target, err = tx.CreateCollection(ctx, "target", nil)
		return err
	})
	checkEvents(t, "create", ent,
		ChangeEvent{Op: "create", Coll: "c", UUID: c.UUID, Desc: csDoc("validationLevel", "moderate")},
		ChangeEvent{Op: "create", Coll: "target", UUID: target.UUID, Desc: csDoc()})
	ent = writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.RenameCollection("c", "r", false) })
	checkEvents(t, "rename", ent, ChangeEvent{Op: "rename", Coll: "c", UUID: c.UUID, To: "r"})
	ent = writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.RenameCollection("r", "target", true) })
	checkEvents(t, "rename with dropTarget", ent, ChangeEvent{Op: "rename", Coll: "r", UUID: c.UUID, To: "target",
		Desc: csDoc("dropTarget", bson.Binary{Subtype: 4, Data: target.UUID[:]})})
	mustWrite(t, d, func(tx *Tx) error { _, err := tx.CreateCollection(ctx, "other", nil); return err })
	wantNoEntry(t, e, "a rename onto an existing collection without dropTarget", func() {
		if err := d.Write(ctx, func(tx *Tx) error { return tx.RenameCollection("other", "target", false) }); !errors.Is(err, ErrNamespaceExists) {
			t.Fatalf("rename: %v", err)
		}
	})

	a, b := indexSpec("a_1", false, "a"), indexSpec("b_1", true, "b")
	aHidden := csDoc("v", int32(2), "key", csD("a", int32(1)), "name", "a_1", "hidden", true)
	setIndexes := func(specs ...bsoncore.Document) ChangeEntry {
		return writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.SetIndexes(ctx, "target", specs) })
	}
	list := func(specs ...any) bsoncore.Document { return csDoc("indexes", bson.A(specs)) }
	checkEvents(t, "createIndexes", setIndexes(a),
		ChangeEvent{Op: "createIndexes", Coll: "target", UUID: c.UUID, Desc: list(a)})
	checkEvents(t, "createIndexes of a second", setIndexes(a, b),
		ChangeEvent{Op: "createIndexes", Coll: "target", UUID: c.UUID, Desc: list(b)})
	checkEvents(t, "an index modified", setIndexes(aHidden, b),
		ChangeEvent{Op: "modify", Coll: "target", UUID: c.UUID, Desc: csDoc("index", aHidden)})
	checkEvents(t, "dropIndexes", setIndexes(b),
		ChangeEvent{Op: "dropIndexes", Coll: "target", UUID: c.UUID, Desc: list(aHidden)})

	opts := csDoc("validationLevel", "moderate", "changeStreamPreAndPostImages", csD("enabled", true))
	desc := csDoc("changeStreamPreAndPostImages", csD("enabled", true))
	ent = writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.SetOptions("target", opts, desc) })
	checkEvents(t, "modify", ent, ChangeEvent{Op: "modify", Coll: "target", UUID: c.UUID, Desc: desc,
		Before: csDoc("collectionOptions", csD("uuid", bson.Binary{Subtype: 4, Data: c.UUID[:]}, "validationLevel", "moderate"))})
	// From then on the collection keeps images.
	v1, v2 := csDoc("_id", int32(1), "x", int32(1)), csDoc("_id", int32(1), "x", int32(2))
	writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.Insert(ctx, "target", v1) })
	ent = writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.Update(ctx, "target", v2) })
	checkEvents(t, "update after images were turned on", ent, ChangeEvent{Op: "update", Coll: "target", UUID: c.UUID,
		Key: csDoc("_id", int32(1)), Doc: v2, Pre: v1, Update: UpdateDescription(v1, v2)})

	ent = writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.DropCollection("target") })
	checkEvents(t, "drop", ent, ChangeEvent{Op: "drop", Coll: "target", UUID: c.UUID})
}

// TestChangeCaptureBranches: a write on another branch says so.
func TestChangeCaptureBranches(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	first := writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return insertDocs(tx, doc(1, "main")) })
	if _, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateBranch(ctx, "feature", Revision{Branch: DefaultBranch}); err != nil {
		t.Fatal(err)
	}
	uuid := first.Events[0].UUID
	onFeature := writeOne(t, e, d, "feature", func(tx *Tx) error { return tx.Insert(ctx, "c", doc(2, "feature")) })
	onMain := writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(3, "main")) })
	if onFeature.Branch != "feature" || onMain.Branch != DefaultBranch || onFeature.DB != "db" {
		t.Fatalf("branches %q and %q", onFeature.Branch, onMain.Branch)
	}
	if !(first.LSN < onFeature.LSN && onFeature.LSN < onMain.LSN) {
		t.Fatalf("lsns %d %d %d", first.LSN, onFeature.LSN, onMain.LSN)
	}
	checkEvents(t, "feature", onFeature, ChangeEvent{Op: "insert", Coll: "c", UUID: uuid, Key: csDoc("_id", int32(2)), Doc: doc(2, "feature")})
	checkEvents(t, "main", onMain, ChangeEvent{Op: "insert", Coll: "c", UUID: uuid, Key: csDoc("_id", int32(3)), Doc: doc(3, "main")})
}

// TestChangeCaptureTransactions: a committed transaction is one entry
// naming it; an aborted one, or one that wrote nothing, adds none; a
// retryable write is no transaction.
func TestChangeCaptureTransactions(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	first := writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return insertDocs(tx, doc(1, "a")) })
	uuid := first.Events[0].UUID
	sess := SessionKey{ID: [16]byte{9, 8, 7}, UID: [32]byte{1, 2, 3, 4}}
	commit := func(txn *Txn) ChangeEntry {
		t.Helper()
		seq := e.Changes().Stats().Next
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		got := readChanges(t, e.Changes(), seq)
		if len(got) != 1 {
			t.Fatalf("the commit added %d entries", len(got))
		}
		return got[0]
	}
	txn, _ := d.BeginTxn(ctx, DefaultBranch)
	if err := txn.Tx().Insert(ctx, "c", doc(2, "t")); err != nil {
		t.Fatal(err)
	}
	if err := txn.Tx().Replace(ctx, "c", doc(1, "t")); err != nil {
		t.Fatal(err)
	}
	txn.RecordCommit(sess, 7)
	ent := commit(txn)
	if ent.Txn == nil || ent.Txn.Session != sess || ent.Txn.Number != 7 {
		t.Fatalf("txn %+v", ent.Txn)
	}
	checkEvents(t, "transaction", ent,
		ChangeEvent{Op: "insert", Coll: "c", UUID: uuid, Key: csDoc("_id", int32(2)), Doc: doc(2, "t")},
		ChangeEvent{Op: "replace", Coll: "c", UUID: uuid, Key: csDoc("_id", int32(1)), Doc: doc(1, "t")})

	wantNoEntry(t, e, "an aborted transaction", func() {
		txn, _ := d.BeginTxn(ctx, DefaultBranch)
		txn.Tx().Insert(ctx, "c", doc(3, "aborted"))
		txn.RecordCommit(sess, 8)
		txn.Abort()
	})
	wantNoEntry(t, e, "a read-only transaction", func() {
		txn, _ := d.BeginTxn(ctx, DefaultBranch)
		txn.Tx().Get(ctx, "c", idValue(1))
		txn.RecordCommit(sess, 9)
		if err := txn.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	})
	// A transaction whose branch moved on commits its changes replayed.
	txn, _ = d.BeginTxn(ctx, DefaultBranch)
	if err := txn.Tx().Insert(ctx, "c", doc(4, "t")); err != nil {
		t.Fatal(err)
	}
	if err := txn.Tx().Update(ctx, "c", doc(2, "u")); err != nil {
		t.Fatal(err)
	}
	txn.RecordCommit(sess, 10)
	writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(5, "plain")) })
	ent = commit(txn)
	if ent.Txn == nil || ent.Txn.Session != sess || ent.Txn.Number != 10 {
		t.Fatalf("replayed txn %+v", ent.Txn)
	}
	checkEvents(t, "replayed transaction", ent,
		ChangeEvent{Op: "insert", Coll: "c", UUID: uuid, Key: csDoc("_id", int32(4)), Doc: doc(4, "t")},
		ChangeEvent{Op: "update", Coll: "c", UUID: uuid, Key: csDoc("_id", int32(2)), Update: UpdateDescription(doc(2, "t"), doc(2, "u"))})
	// A retryable write records outcomes, but is no transaction.
	ent = writeOne(t, e, d, DefaultBranch, func(tx *Tx) error {
		tx.RecordOutcome(sess, 11, 0, csDoc("n", int32(1)))
		return tx.Insert(ctx, "c", doc(6, "retryable"))
	})
	if ent.Txn != nil {
		t.Fatalf("a retryable write's entry names a transaction: %+v", ent.Txn)
	}

	// A transaction over two databases: one entry in each, both naming it.
	d2, err := e.Database(ctx, "db2", true)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d2, func(tx *Tx) error { return insertDocs(tx, doc(1, "x")) })
	seq := e.Changes().Stats().Next
	txns := beginTwo(t, d, d2, 20)
	for _, txn := range txns {
		txn.RecordCommit(sess, 12)
	}
	if err := CommitTxns(ctx, txns); err != nil {
		t.Fatal(err)
	}
	got := readChanges(t, e.Changes(), seq)
	if len(got) != 2 || got[0].DB == got[1].DB {
		t.Fatalf("a transaction over two databases added %d entries", len(got))
	}
	for _, ent := range got {
		if ent.Txn == nil || ent.Txn.Session != sess || ent.Txn.Number != 12 || len(ent.Events) != 1 ||
			ent.Events[0].Op != "insert" || !bytes.Equal(ent.Events[0].Doc, doc(20, ent.DB)) {
			t.Fatalf("entry of %s: %+v %v", ent.DB, ent.Txn, opsOf(ent))
		}
	}
}

// TestChangeCaptureOnlyDurable: an entry is in the change log only once
// its write-ahead-log record is durable, and every write's entry gets
// there once, synced writes' before they return and unsynced ones' soon
// after.
func TestChangeCaptureOnlyDurable(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	mustWrite(t, d, func(tx *Tx) error { _, err := tx.EnsureCollection(ctx, "c"); return err })
	l := e.Changes()
	r, _ := l.Reader(0)
	const writers, writes = 3, 40
	done := make(chan struct{})
	seen := map[uint64]int{}
	var bad []string
	pollDone := make(chan struct{})
	go func() {
		var deadline time.Time
		defer close(pollDone)
		for {
			ent, ok, err := r.Next()
			if err != nil {
				bad = append(bad, err.Error())
				return
			}
			if ok {
				if durable := d.wl.Durable(); ent.LSN > durable {
					bad = append(bad, fmt.Sprintf("entry of lsn %d read while the log was durable to %d", ent.LSN, durable))
				}
				seen[ent.LSN]++
				continue
			}
			if len(seen) == writers*writes {
				return
			}
			select {
			case <-done: // the unsynced writes' entries come soon
				if time.Since(deadline) > 0 {
					bad = append(bad, fmt.Sprintf("%d entries, want %d", len(seen), writers*writes))
					return
				}
			default:
				deadline = time.Now().Add(5 * time.Second)
			}
			select {
			case <-l.Wait():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := 0; i < writes; i++ {
				wctx := ctx
				if i%2 == 1 {
					wctx = NoSync(ctx)
				}
				id := int32(w*1000 + i)
				seq := l.Stats().Next
				err := d.Write(wctx, func(tx *Tx) error { return tx.Insert(wctx, "c", doc(id, "x")) })
				if err != nil {
					errs <- err
					return
				}
				if wctx == ctx && !hasDoc(l, seq, id) {
					errs <- fmt.Errorf("write of %d returned before its entry was in the change log", id)
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	close(done)
	<-pollDone
	for _, b := range bad {
		t.Error(b)
	}
	for lsn, n := range seen {
		if n != 1 {
			t.Errorf("lsn %d has %d entries", lsn, n)
		}
	}
}

// hasDoc reports whether an entry from seq on inserts the document id.
func hasDoc(l *ChangeLog, seq uint64, id int32) bool {
	r, err := l.Reader(seq)
	if err != nil {
		return false
	}
	for {
		ent, ok, err := r.Next()
		if err != nil || !ok {
			return false
		}
		for _, ev := range ent.Events {
			if ev.Op == "insert" && ev.Key.Lookup("_id").Int32() == id {
				return true
			}
		}
	}
}

// canonicalUpdate shows an updateDescription with its updatedFields and
// disambiguatedPaths sorted by path and its removedFields sorted, so that
// descriptions compare whatever order their fields come in.
func canonicalUpdate(u bsoncore.Document) string {
	sorted := func(key string) string {
		d, ok := u.Lookup(key).DocumentOK()
		if !ok {
			return key + ": missing"
		}
		els, _ := d.Elements()
		var parts []string
		for _, el := range els {
			parts = append(parts, fmt.Sprintf("%q: %s", el.Key(), el.Value()))
		}
		sort.Strings(parts)
		return key + ": {" + strings.Join(parts, ", ") + "}"
	}
	removed := "removedFields: missing"
	if arr, ok := u.Lookup("removedFields").ArrayOK(); ok {
		vals, _ := arr.Values()
		var names []string
		for _, v := range vals {
			names = append(names, v.String())
		}
		sort.Strings(names)
		removed = "removedFields: [" + strings.Join(names, ", ") + "]"
	}
	truncated := "truncatedArrays: missing"
	if arr, ok := u.Lookup("truncatedArrays").ArrayOK(); ok {
		truncated = "truncatedArrays: " + arr.String()
	}
	keys, _ := u.Elements()
	return fmt.Sprintf("%s; %s; %s; %s (%d fields)", sorted("updatedFields"), removed, truncated, sorted("disambiguatedPaths"), len(keys))
}

// TestUpdateDescription: what an update changed, as a change stream's
// updateDescription: dotted paths, array elements by index, removed
// fields, truncated arrays, and the paths whose dotted form is ambiguous.
func TestUpdateDescription(t *testing.T) {
	type desc struct {
		updated, ambiguous bson.D
		removed            bson.A
		truncated          bson.A
	}
	for _, c := range []struct {
		name string
		a, b bson.D
		want desc
	}{
		{"unchanged", csD("_id", 1, "a", "x"), csD("_id", 1, "a", "x"), desc{}},
		{"set", csD("_id", 1, "a", int32(1)), csD("_id", 1, "a", int32(2)), desc{updated: csD("a", int32(2))}},
		{"type changed", csD("_id", 1, "a", int32(1)), csD("_id", 1, "a", int64(1)), desc{updated: csD("a", int64(1))}},
		{"added", csD("_id", 1), csD("_id", 1, "b", "x"), desc{updated: csD("b", "x")}},
		{"removed", csD("_id", 1, "a", 1, "b", 2), csD("_id", 1, "a", 1), desc{removed: bson.A{"b"}}},
		{"updated and removed", csD("_id", 1, "a", 1, "b", 2, "c", 3), csD("_id", 1, "c", 4, "a", 1),
			desc{updated: csD("c", int32(4)), removed: bson.A{"b"}}},
		{"nested", csD("_id", 1, "o", csD("x", 1, "y", csD("z", 1))), csD("_id", 1, "o", csD("x", 1, "y", csD("z", 2), "w", 3)),
			desc{updated: csD("o.y.z", int32(2), "o.w", int32(3))}},
		{"nested removed", csD("_id", 1, "o", csD("x", 1, "y", csD("z", 1, "k", 1))), csD("_id", 1, "o", csD("y", csD("k", 1))),
			desc{removed: bson.A{"o.x", "o.y.z"}}},
		{"document replaced by a scalar", csD("_id", 1, "o", csD("x", 1)), csD("_id", 1, "o", "s"), desc{updated: csD("o", "s")}},
		{"scalar replaced by a document", csD("_id", 1, "o", 1), csD("_id", 1, "o", csD("x", 1)), desc{updated: csD("o", csD("x", int32(1)))}},
		{"document replaced by an array", csD("_id", 1, "o", csD("x", 1)), csD("_id", 1, "o", bson.A{1}), desc{updated: csD("o", bson.A{int32(1)})}},
		{"array element", csD("_id", 1, "arr", bson.A{1, 2, 3}), csD("_id", 1, "arr", bson.A{1, 5, 3}), desc{updated: csD("arr.1", int32(5))}},
		{"array growth", csD("_id", 1, "arr", bson.A{"a", "b", "c"}), csD("_id", 1, "arr", bson.A{"a", "b", "c", "d"}),
			desc{updated: csD("arr.3", "d")}},
		{"array growth by two", csD("_id", 1, "arr", bson.A{}), csD("_id", 1, "arr", bson.A{"a", "b"}),
			desc{updated: csD("arr.0", "a", "arr.1", "b")}},
		{"array truncation", csD("_id", 1, "arr", bson.A{"foo", csD("a", "bar"), 1, 2, 3}), csD("_id", 1, "arr", bson.A{"foo", csD("a", "bar")}),
			desc{truncated: bson.A{csD("field", "arr", "newSize", int32(2))}}},
		{"array truncated and changed", csD("_id", 1, "arr", bson.A{1, 2, 3}), csD("_id", 1, "arr", bson.A{9}),
			desc{updated: csD("arr.0", int32(9)), truncated: bson.A{csD("field", "arr", "newSize", int32(1))}}},
		{"array emptied", csD("_id", 1, "o", csD("arr", bson.A{1, 2})), csD("_id", 1, "o", csD("arr", bson.A{})),
			desc{truncated: bson.A{csD("field", "o.arr", "newSize", int32(0))}}},
		{"document in an array", csD("_id", 1, "arr", bson.A{csD("a", 1), csD("a", 2)}), csD("_id", 1, "arr", bson.A{csD("a", 1), csD("a", 3, "b", 1)}),
			desc{updated: csD("arr.1.a", int32(3), "arr.1.b", int32(1))}},
		{"removed in a document in an array", csD("_id", 1, "arr", bson.A{csD("a", 1, "b", 2)}), csD("_id", 1, "arr", bson.A{csD("a", 1)}),
			desc{removed: bson.A{"arr.0.b"}}},
		{"array in an array", csD("_id", 1, "m", bson.A{bson.A{1, 2}}), csD("_id", 1, "m", bson.A{bson.A{1, 3}}), desc{updated: csD("m.0.1", int32(3))}},
		{"numeric field name in a document", csD("_id", 1, "a", csD("1", "x")), csD("_id", 1, "a", csD("1", "y")),
			desc{updated: csD("a.1", "y"), ambiguous: csD("a.1", bson.A{"a", "1"})}},
		{"numeric field name added", csD("_id", 1, "a", csD()), csD("_id", 1, "a", csD("10", true)),
			desc{updated: csD("a.10", true), ambiguous: csD("a.10", bson.A{"a", "10"})}},
		{"numeric field name removed", csD("_id", 1, "a", csD("1", "x", "k", 1)), csD("_id", 1, "a", csD("k", 1)),
			desc{removed: bson.A{"a.1"}, ambiguous: csD("a.1", bson.A{"a", "1"})}},
		{"array index then a numeric field name", csD("_id", 1, "a", bson.A{csD("1", "x")}), csD("_id", 1, "a", bson.A{csD("1", "y")}),
			desc{updated: csD("a.0.1", "y"), ambiguous: csD("a.0.1", bson.A{"a", int32(0), "1"})}},
		{"field name with a dot", csD("_id", 1, "a.b", 1), csD("_id", 1, "a.b", 2),
			desc{updated: csD("a.b", int32(2)), ambiguous: csD("a.b", bson.A{"a.b"})}},
		{"dotted name below a plain one", csD("_id", 1, "o", csD("x.y", 1)), csD("_id", 1, "o", csD("x.y", 2)),
			desc{updated: csD("o.x.y", int32(2)), ambiguous: csD("o.x.y", bson.A{"o", "x.y"})}},
		{"plain paths with array indexes are not ambiguous", csD("_id", 1, "a", bson.A{csD("b", bson.A{1, 2})}), csD("_id", 1, "a", bson.A{csD("b", bson.A{1, 7})}),
			desc{updated: csD("a.0.b.1", int32(7))}},
		{"a name that only looks numeric", csD("_id", 1, "a", csD("01", 1, "1x", 1)), csD("_id", 1, "a", csD("01", 2, "1x", 2)),
			desc{updated: csD("a.01", int32(2), "a.1x", int32(2))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := c.want
			for _, p := range []*bson.D{&w.updated, &w.ambiguous} {
				if *p == nil {
					*p = bson.D{}
				}
			}
			if w.removed == nil {
				w.removed = bson.A{}
			}
			if w.truncated == nil {
				w.truncated = bson.A{}
			}
			want := csDoc("updatedFields", w.updated, "removedFields", w.removed, "truncatedArrays", w.truncated, "disambiguatedPaths", w.ambiguous)
			a, _ := bson.Marshal(c.a)
			b, _ := bson.Marshal(c.b)
			got := UpdateDescription(a, b)
			if canonicalUpdate(got) != canonicalUpdate(want) {
				t.Fatalf("UpdateDescription\n got %s\nwant %s", canonicalUpdate(got), canonicalUpdate(want))
			}
		})
	}
}

// entriesOf reads the kept entries of database db.
func entriesOf(t *testing.T, l *ChangeLog, db string) []ChangeEntry {
	t.Helper()
	var out []ChangeEntry
	for _, ent := range readChanges(t, l, l.Stats().First) {
		if ent.DB == db {
			out = append(out, ent)
		}
	}
	return out
}

// markSeq is the sync mark's sequence number (0: no mark).
func markSeq(t *testing.T, dir string) uint64 {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "synced")); os.IsNotExist(err) {
		return 0
	}
	s, _ := readMarkFile(t, dir)
	return s
}

// cutChangeLog removes the entries from seq on from the change log of a
// data directory (torn: leaving part of entry seq), as a crash may lose
// what was written after the last sync.
func cutChangeLog(t *testing.T, dataDir string, seq uint64, torn bool) {
	t.Helper()
	dir := filepath.Join(dataDir, "changes")
	if s := markSeq(t, dir); s > seq {
		t.Fatalf("entries from %d on cannot be lost: the sync mark covers them up to %d", seq, s)
	}
	for _, path := range segFiles(t, dir) {
		first, err := segFirst(path)
		if err != nil {
			t.Fatal(err)
		}
		if first > seq {
			os.Remove(path)
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		off, cur := int64(changeHeaderSize), first
		for cur < seq {
			payload, ok := readChangeEntry(data, off, cur)
			if !ok {
				break
			}
			off += changeEntryHeader + int64(len(payload))
			cur++
		}
		if cur != seq {
			continue // seq is in a later segment
		}
		if torn && off+changeEntryHeader < int64(len(data)) {
			off += changeEntryHeader - 3
		}
		if err := os.Truncate(path, off); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSameEntries fails unless got holds the entries of want (as written
// before a crash), at the same sequence numbers, in LSN order.
func checkSameEntries(t *testing.T, what string, got, want []ChangeEntry) {
	t.Helper()
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(want):
			t.Fatalf("%s: extra entry %d: seq %d lsn %d %v", what, i, got[i].Seq, got[i].LSN, opsOf(got[i]))
		case i >= len(got):
			t.Fatalf("%s: %d entries, want %d: lost seq %d lsn %d %v", what, len(got), len(want), want[i].Seq, want[i].LSN, opsOf(want[i]))
		}
		if d := diffEntry(got[i], want[i], false); d != "" || got[i].Seq != want[i].Seq {
			t.Fatalf("%s: entry %d (seq %d, want %d): %s", what, i, got[i].Seq, want[i].Seq, d)
		}
		if i > 0 && got[i].LSN != 0 && got[i].LSN <= got[i-1].LSN {
			t.Fatalf("%s: entry %d has lsn %d after %d", what, i, got[i].LSN, got[i-1].LSN)
		}
	}
}

// crashWrites writes to database "db": a few writes, optionally a branch
// and a checkpoint, then the writes after (returned as the index of
// their first entry), of every kind the log rebuilds.
func crashWrites(t *testing.T, e *Engine, d *Database, branches, checkpoint bool) (after int) {
	t.Helper()
	other := DefaultBranch
	if branches {
		other = "feature"
	}
	write := func(branch string, fn func(tx *Tx) error) {
		t.Helper()
		if err := d.WriteBranch(ctx, branch, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(DefaultBranch, func(tx *Tx) error {
		if _, err := tx.CreateCollection(ctx, "c", nil); err != nil {
			return err
		}
		if _, err := tx.CreateCollection(ctx, "img", imagesOn); err != nil {
			return err
		}
		for i := int32(1); i <= 3; i++ {
			if err := tx.Insert(ctx, "c", doc(i, "a")); err != nil {
				return err
			}
		}
		return tx.Insert(ctx, "img", csDoc("_id", int32(1), "n", int32(1), "tags", bson.A{"x", "y", "z"}))
	})
	if branches {
		if _, err := d.Commit(ctx, DefaultBranch, CommitOptions{Message: "base"}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CreateBranch(ctx, "feature", Revision{Branch: DefaultBranch}); err != nil {
			t.Fatal(err)
		}
	}
	write(DefaultBranch, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", []bsoncore.Document{indexSpec("v_1", false, "v")}) })
	write(other, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(10, "other")) })
	if checkpoint {
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
	}
	after = len(entriesOf(t, e.Changes(), "db"))
	write(DefaultBranch, func(tx *Tx) error { return tx.Replace(ctx, "c", doc(1, "b")) })
	write(DefaultBranch, func(tx *Tx) error {
		return tx.Update(ctx, "img", csDoc("_id", int32(1), "n", int32(2), "tags", bson.A{"x"}))
	})
	write(other, func(tx *Tx) error { return tx.Update(ctx, "c", doc(2, "other")) })
	write(DefaultBranch, func(tx *Tx) error {
		if err := tx.Delete(ctx, "c", idValue(3)); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", doc(4, "a"))
	})
	txn, err := d.BeginTxn(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	txn.Tx().Insert(ctx, "c", doc(5, "txn"))
	txn.Tx().Delete(ctx, "img", idValue(1))
	txn.RecordCommit(SessionKey{ID: [16]byte{5}}, 3)
	if err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	write(DefaultBranch, func(tx *Tx) error {
		if _, err := tx.CreateCollection(ctx, "t", nil); err != nil {
			return err
		}
		return tx.RenameCollection("t", "renamed", false)
	})
	write(DefaultBranch, func(tx *Tx) error { return tx.RenameCollection("img", "renamed", true) })
	write(other, func(tx *Tx) error { return tx.Delete(ctx, "c", idValue(10)) })
	write(DefaultBranch, func(tx *Tx) error { return tx.DropCollection("renamed") })
	write(DefaultBranch, func(tx *Tx) error { return tx.SetIndexes(ctx, "c", nil) })
	return after
}

// TestChangeLogRebuiltAfterACrash: after a crash lost the change log's
// tail (written after its last sync), recovery rebuilds the entries of
// the records the write-ahead log holds: exactly one per write, in LSN
// order, as they were; and clean restarts add none.
func TestChangeLogRebuiltAfterACrash(t *testing.T) {
	for _, c := range []struct {
		name                 string
		branches, checkpoint bool
		lose                 int // entries lost from the end (-1: all after the sync point)
		torn                 bool
	}{
		{"nothing lost", true, true, 0, false},
		{"tail lost", true, true, 4, false},
		{"tail torn", true, true, 4, true},
		{"all since the checkpoint lost", true, true, -1, false},
		{"one branch, no checkpoint", false, false, 5, true},
		{"one branch, no sync ever", false, false, -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			e, d := csEngine(t, dir)
			after := crashWrites(t, e, d, c.branches, c.checkpoint)
			want := entriesOf(t, e.Changes(), "db")
			if len(want) != after+10 {
				t.Fatalf("%d entries, %d before the sync point; want 10 after it", len(want), after)
			}
			crashed := crashCopy(t, dir)
			e.Close()
			lose := c.lose
			if lose < 0 {
				lose = len(want) - after
			}
			if lose > 0 {
				cutChangeLog(t, crashed, want[len(want)-lose].Seq, c.torn)
			}
			probe := openTestChangeLog(t, filepath.Join(crashed, "changes"))
			if n := len(entriesOf(t, probe, "db")); n != len(want)-lose {
				t.Fatalf("the crashed copy's change log holds %d entries, want %d", n, len(want)-lose)
			}
			abandonChangeLog(probe)

			// Recovery rebuilds them as the engine opens, before any use.
			e2 := openEngine(t, crashed, Options{})
			checkSameEntries(t, "after the crash", entriesOf(t, e2.Changes(), "db"), want)
			d2, err := e2.Database(ctx, "db", false)
			if err != nil || d2 == nil {
				t.Fatalf("reopen: %v", err)
			}
			mustWrite(t, d2, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(100, "after")) })
			want = entriesOf(t, e2.Changes(), "db")
			if err := e2.Close(); err != nil {
				t.Fatal(err)
			}
			// Clean restarts, an idle close and a crash with nothing lost
			// add nothing.
			e3 := openEngine(t, crashed, Options{})
			checkSameEntries(t, "after a clean restart", entriesOf(t, e3.Changes(), "db"), want)
			d3, _ := e3.Database(ctx, "db", false)
			mustWrite(t, d3, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(101, "after")) })
			e3.closeIdleAll(later())
			if d3.isOpen() {
				t.Fatal("not closed for idleness")
			}
			mustWrite(t, d3, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(102, "after")) })
			want = entriesOf(t, e3.Changes(), "db")
			if len(want) != after+13 {
				t.Fatalf("%d entries, want %d", len(want), after+13)
			}
			again := crashCopy(t, crashed)
			e3.Close()
			e4 := openEngine(t, crashed, Options{})
			checkSameEntries(t, "after another clean restart", entriesOf(t, e4.Changes(), "db"), want)
			e4.Close()
			e5 := openEngine(t, again, Options{})
			defer e5.Close()
			checkSameEntries(t, "after a crash that lost nothing", entriesOf(t, e5.Changes(), "db"), want)
		})
	}
}

// TestChangeLogOrderWithATransactionOverTwoDatabases: a transaction over
// two databases logs its parts' records first and publishes them (and
// queues their entries) only after its commit decision; a write on another
// branch of one of the databases in between gets a higher LSN and is
// durable first. The change log must still hold that database's entries
// in LSN order, and after a crash that lost the transaction's entries
// recovery must rebuild them.
func TestChangeLogOrderWithATransactionOverTwoDatabases(t *testing.T) {
	dir := t.TempDir()
	e, a, b := openTwo(t, dir)
	defer e.Close()
	for _, d := range []*Database{a, b} {
		mustWrite(t, d, func(tx *Tx) error { return insertDocs(tx, doc(1, "x")) })
	}
	if _, err := a.Commit(ctx, DefaultBranch, CommitOptions{Message: "base"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateBranch(ctx, "feature", Revision{Branch: DefaultBranch}); err != nil {
		t.Fatal(err)
	}
	txns := beginTwo(t, a, b, 2)
	sess := SessionKey{ID: [16]byte{4, 4}}
	for _, txn := range txns {
		txn.RecordCommit(sess, 1)
	}
	// Once every part's record is in its log, before the decision, a
	// write on a@feature runs to its end.
	var fired atomic.Bool
	var racedErr error
	e.panics.mu.Lock()
	e.panics.hook = func(step string) {
		if step == "txn.prepared" && fired.CompareAndSwap(false, true) {
			racedErr = a.WriteBranch(ctx, "feature", func(tx *Tx) error { return tx.Insert(ctx, "c", doc(3, "feature")) })
		}
	}
	e.panics.mu.Unlock()
	e.panics.armed.Store(true)
	if err := CommitTxns(ctx, txns); err != nil {
		t.Fatal(err)
	}
	if !fired.Load() || racedErr != nil {
		t.Fatalf("the write on a@feature did not run during the commit: %v %v", fired.Load(), racedErr)
	}
	lsns := func(ents []ChangeEntry) []uint64 {
		var out []uint64
		for _, ent := range ents {
			out = append(out, ent.LSN)
		}
		return out
	}
	want := entriesOf(t, e.Changes(), "a")
	if len(want) != 3 {
		t.Fatalf("a has %d entries, want 3", len(want))
	}
	got := lsns(want)
	if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i] < got[j] }) {
		t.Errorf("a's entries have lsns %v: not in LSN order", got)
	}
	// A crash loses the entries from the transaction's first on.
	cut := uint64(0)
	for _, ent := range readChanges(t, e.Changes(), 1) {
		if ent.Txn != nil && cut == 0 {
			cut = ent.Seq
		}
	}
	crashed := crashCopy(t, dir)
	cutChangeLog(t, crashed, cut, false)
	e2 := openEngine(t, crashed, Options{})
	defer e2.Close()
	for _, db := range []string{"a", "b"} {
		var txnEntries int
		for _, ent := range entriesOf(t, e2.Changes(), db) {
			if ent.Txn != nil && ent.Txn.Session == sess {
				txnEntries++
			}
		}
		if txnEntries != 1 {
			t.Errorf("after the crash %s has %d entries of the transaction, want 1 (lsns %v)", db, txnEntries, lsns(entriesOf(t, e2.Changes(), db)))
		}
	}
}

// docModel is a branch's documents: collection -> _id (as bytes) -> document.
type docModel map[string]map[string]string

func idKey(id bsoncore.Value) string { return string(append([]byte{byte(id.Type)}, id.Data...)) }

// branchModel reads a branch's documents as they are now.
func branchModel(t *testing.T, d *Database, branch string) docModel {
	t.Helper()
	snap, err := d.BranchSnapshot(ctx, branch)
	if err != nil {
		t.Fatal(err)
	}
	m := docModel{}
	for _, info := range snap.Collections() {
		docs := map[string]string{}
		it, err := snap.Scan(ctx, info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for {
			doc, err := it.Next(ctx)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			docs[idKey(doc.Lookup("_id"))] = string(doc)
		}
		m[info.Name] = docs
	}
	return m
}

// apply applies document and collection events to the model, as a change
// stream's reader would to a copy of the branch; it fails on an event
// that does not fit (an insert of a document there, a delete of one that
// is not, an update with no document after it).
func (m docModel) apply(ev ChangeEvent) error {
	docs := m[ev.Coll]
	var key string
	if ev.Key != nil {
		key = idKey(ev.Key.Lookup("_id"))
	}
	_, exists := docs[key]
	switch ev.Op {
	case "create":
		if docs != nil {
			return fmt.Errorf("create of %s, which exists", ev.Coll)
		}
		m[ev.Coll] = map[string]string{}
	case "drop":
		delete(m, ev.Coll)
	case "insert", "replace", "delete":
		switch {
		case docs == nil:
			return fmt.Errorf("%s in %s, which does not exist", ev.Op, ev.Coll)
		case ev.Op == "insert" && exists, ev.Op != "insert" && !exists:
			return fmt.Errorf("%s of %s in %s: exists %v", ev.Op, ev.Key, ev.Coll, exists)
		case ev.Op == "delete":
			delete(docs, key)
		case ev.Doc == nil || !bytes.Equal(ev.Key, documentKey(nil, ev.Doc)):
			return fmt.Errorf("%s of %s with document %s", ev.Op, ev.Key, csString(ev.Doc))
		default:
			docs[key] = string(ev.Doc)
		}
	case "createIndexes", "dropIndexes", "modify":
	default:
		return fmt.Errorf("unexpected %s event in %s", ev.Op, ev.Coll)
	}
	return nil
}

// diffModels describes how got differs from want ("" when it does not).
func diffModels(got, want docModel) string {
	var diffs []string
	for c, docs := range want {
		if got[c] == nil {
			diffs = append(diffs, "collection "+c+" missing")
			continue
		}
		for k, v := range docs {
			if g, ok := got[c][k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: %s missing", c, bsoncore.Document(v)))
			} else if g != v {
				diffs = append(diffs, fmt.Sprintf("%s: %s, want %s", c, bsoncore.Document(g), bsoncore.Document(v)))
			}
		}
	}
	for c, docs := range got {
		if want[c] == nil {
			diffs = append(diffs, "extra collection "+c)
			continue
		}
		for k, v := range docs {
			if _, ok := want[c][k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s: extra %s", c, bsoncore.Document(v)))
			}
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// stateChange runs a version-control operation on branch and checks that
// the entries it appended, applied to the branch's documents before it,
// give the branch's documents after it.
func stateChange(t *testing.T, e *Engine, d *Database, branch, what string, op func() error) []ChangeEntry {
	t.Helper()
	model := branchModel(t, d, branch)
	seq := e.Changes().Stats().Next
	if err := op(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	ents := readChanges(t, e.Changes(), seq)
	var events int
	for _, ent := range ents {
		if ent.DB != d.Name() || ent.Branch != branch || ent.LSN != 0 {
			t.Fatalf("%s: an entry of %s@%s lsn %d: %v", what, ent.DB, ent.Branch, ent.LSN, opsOf(ent))
		}
		for _, ev := range ent.Events {
			if err := model.apply(ev); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			events++
		}
	}
	if diff := diffModels(model, branchModel(t, d, branch)); diff != "" {
		t.Fatalf("%s: %d events do not lead to the branch's documents: %s", what, events, diff)
	}
	return ents
}

func commitOn(t *testing.T, d *Database, branch, msg string) Revision {
	t.Helper()
	info, err := d.Commit(ctx, branch, CommitOptions{Message: msg})
	if err != nil {
		t.Fatalf("commit %q on %s: %v", msg, branch, err)
	}
	rev, err := d.Resolve(ctx, info.ID, branch)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func delDoc(t *testing.T, d *Database, branch, coll string, id int32) {
	t.Helper()
	if err := d.WriteBranch(ctx, branch, func(tx *Tx) error { return tx.Delete(ctx, coll, idValue(id)) }); err != nil {
		t.Fatal(err)
	}
}

// TestChangeStateChanges: merges (fast-forward, three-way, conflicting,
// aborted), resets, cherry-picks, reverts and rebases of the watched
// branch append the document events that take a reader's copy of its
// documents to what they are after.
func TestChangeStateChanges(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	const main = DefaultBranch
	mainRev, featureRev := Revision{Branch: main}, Revision{Branch: "feature"}
	for i := int32(1); i <= 6; i++ {
		put(t, d, main, docKV(i, "a", 1, "b", 1))
	}
	mustWrite(t, d, func(tx *Tx) error {
		if _, err := tx.CreateCollection(ctx, "gone", nil); err != nil {
			return err
		}
		return tx.Insert(ctx, "gone", doc(1, "g"))
	})
	base := commitOn(t, d, main, "base")
	if _, err := d.CreateBranch(ctx, "feature", mainRev); err != nil {
		t.Fatal(err)
	}

	// Fast-forward: main takes feature's inserts, replaces, deletes, a
	// new collection and a dropped one.
	put(t, d, "feature", docKV(1, "a", 2, "b", 1))
	delDoc(t, d, "feature", "c", 2)
	put(t, d, "feature", docKV(7, "a", 1))
	err := d.WriteBranch(ctx, "feature", func(tx *Tx) error {
		if _, err := tx.CreateCollection(ctx, "new", nil); err != nil {
			return err
		}
		if err := tx.Insert(ctx, "new", doc(1, "n")); err != nil {
			return err
		}
		return tx.DropCollection("gone")
	})
	if err != nil {
		t.Fatal(err)
	}
	commitOn(t, d, "feature", "feature 1")
	stateChange(t, e, d, main, "a fast-forward merge", func() error {
		res, err := d.Merge(ctx, main, featureRev, MergeOptions{})
		if err == nil && !res.FastForward {
			err = fmt.Errorf("not a fast-forward: %+v", res)
		}
		return err
	})

	// Three-way: both sides changed, in different documents and fields.
	put(t, d, main, docKV(3, "a", 3, "b", 1))
	put(t, d, main, docKV(4, "a", 4, "b", 1))
	commitOn(t, d, main, "main 2")
	put(t, d, "feature", docKV(4, "a", 1, "b", 4)) // field-level merge with main's
	put(t, d, "feature", docKV(8, "a", 1))
	delDoc(t, d, "feature", "c", 5)
	commitOn(t, d, "feature", "feature 2")
	stateChange(t, e, d, main, "a three-way merge", func() error {
		res, err := d.Merge(ctx, main, featureRev, MergeOptions{})
		if err == nil && (res.FastForward || res.UpToDate) {
			err = fmt.Errorf("not a three-way merge: %+v", res)
		}
		return err
	})
	if got := get(t, d, mainRev, 4); got.Lookup("a").Int32() != 4 || got.Lookup("b").Int32() != 4 {
		t.Fatalf("merged document %s", got)
	}

	// A conflicting merge stores the merged state with ours where they
	// conflict; resolving, continuing and aborting move it again.
	conflict := func() {
		t.Helper()
		put(t, d, main, docKV(6, "a", 10, "b", 1))
		commitOn(t, d, main, "main conflict")
		put(t, d, "feature", docKV(6, "a", 20, "b", 1))
		put(t, d, "feature", docKV(9, "a", 1))
		delDoc(t, d, "feature", "c", 8)
		commitOn(t, d, "feature", "feature conflict")
		stateChange(t, e, d, main, "a conflicting merge", func() error {
			if _, err := d.Merge(ctx, main, featureRev, MergeOptions{}); !errors.Is(err, ErrMergeConflicts) {
				return fmt.Errorf("merge: %v, want conflicts", err)
			}
			return nil
		})
	}
	conflict()
	stateChange(t, e, d, main, "resolving a conflict with theirs", func() error {
		return d.ResolveConflict(ctx, main, "c", idValue(6), ResolveTheirs, nil)
	})
	stateChange(t, e, d, main, "continuing the merge", func() error {
		_, err := d.MergeContinue(ctx, main, CommitOptions{})
		return err
	})
	put(t, d, "feature", docKV(6, "a", 21, "b", 1))
	commitOn(t, d, "feature", "feature conflict 2")
	put(t, d, main, docKV(6, "a", 11, "b", 1))
	commitOn(t, d, main, "main conflict 2")
	stateChange(t, e, d, main, "another conflicting merge", func() error {
		if _, err := d.Merge(ctx, main, featureRev, MergeOptions{}); !errors.Is(err, ErrMergeConflicts) {
			return fmt.Errorf("merge: %v, want conflicts", err)
		}
		return nil
	})
	stateChange(t, e, d, main, "aborting the merge", func() error { return d.MergeAbort(ctx, main) })

	// Reset --hard, with uncommitted writes too.
	put(t, d, main, docKV(50, "a", 1))
	delDoc(t, d, main, "c", 1)
	stateChange(t, e, d, main, "a hard reset", func() error {
		_, err := d.Reset(ctx, main, base, true)
		return err
	})
	if get(t, d, mainRev, 2) == nil || get(t, d, mainRev, 7) != nil {
		t.Fatal("the hard reset did not go back to base")
	}
	// A soft reset changes no document.
	ents := stateChange(t, e, d, main, "a soft reset", func() error {
		_, err := d.Reset(ctx, main, featureRev, false)
		return err
	})
	if len(ents) != 0 {
		t.Fatalf("a soft reset appended %d entries", len(ents))
	}
	stateChange(t, e, d, main, "a hard reset to its head", func() error {
		_, err := d.Reset(ctx, main, featureRev, true)
		return err
	})

	// Cherry-pick a commit of feature, then revert it.
	put(t, d, "feature", docKV(10, "a", 1))
	put(t, d, "feature", docKV(4, "a", 1, "b", 40))
	delDoc(t, d, "feature", "c", 7)
	pick := commitOn(t, d, "feature", "pick me")
	put(t, d, main, docKV(11, "a", 1))
	commitOn(t, d, main, "main before the pick")
	var picked MergeResult
	stateChange(t, e, d, main, "a cherry-pick", func() error {
		var err error
		picked, err = d.CherryPick(ctx, main, pick, CommitOptions{})
		return err
	})
	if get(t, d, mainRev, 10) == nil || get(t, d, mainRev, 7) != nil {
		t.Fatal("the cherry-pick did not apply")
	}
	pickedRev, err2 := d.Resolve(ctx, picked.Commit.ID, main)
	if err2 != nil {
		t.Fatal(err2)
	}
	stateChange(t, e, d, main, "a revert", func() error {
		_, err := d.Revert(ctx, main, pickedRev, CommitOptions{})
		return err
	})
	if get(t, d, mainRev, 10) != nil || get(t, d, mainRev, 7) == nil {
		t.Fatal("the revert did not apply")
	}

	// Rebase main's own commits onto feature.
	put(t, d, "feature", docKV(12, "a", 1))
	commitOn(t, d, "feature", "feature before the rebase")
	put(t, d, main, docKV(13, "a", 1))
	commitOn(t, d, main, "main before the rebase")
	stateChange(t, e, d, main, "a rebase", func() error {
		_, err := d.Rebase(ctx, main, featureRev)
		return err
	})
	if get(t, d, mainRev, 12) == nil || get(t, d, mainRev, 13) == nil {
		t.Fatal("the rebase did not apply")
	}
}

// TestChangeLogRetentionThenACrash: retention removing one database's
// recent entries (another's writes filling the log) must not make
// recovery after a crash write them again.
func TestChangeLogRetentionThenACrash(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{ChangeRetentionBytes: 1})
	defer e.Close()
	e.changes.segSize = 2048
	a, err := e.Database(ctx, "a", true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Database(ctx, "b", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := int32(0); i < 5; i++ {
		mustWrite(t, a, func(tx *Tx) error { return insertDocs(tx, doc(i, "a")) })
	}
	pad := strings.Repeat("b", 500)
	for i := int32(0); i < 20; i++ {
		mustWrite(t, b, func(tx *Tx) error { return insertDocs(tx, doc(i, pad)) })
	}
	if n := len(entriesOf(t, e.Changes(), "a")); n != 0 {
		t.Fatalf("retention kept %d of a's entries", n)
	}
	next := e.Changes().Stats().Next
	crashed := crashCopy(t, dir)
	e2 := openEngine(t, crashed, Options{ChangeRetentionBytes: 1})
	defer e2.Close()
	for _, ent := range readChanges(t, e2.Changes(), e2.Changes().Stats().First) {
		if ent.Seq >= next {
			t.Errorf("recovery wrote entry %d again: %s lsn %d %v", ent.Seq, ent.DB, ent.LSN, opsOf(ent))
		}
	}
}

// TestChangeCaptureDropDatabase: dropping a database appends a drop of
// each of its collections and a dropDatabase entry, durably; a database
// made again under its name starts its LSNs again, and its entries are
// rebuilt after a crash like any.
func TestChangeCaptureDropDatabase(t *testing.T) {
	dir := t.TempDir()
	e, d := csEngine(t, dir)
	var c, x CollectionInfo
	mustWrite(t, d, func(tx *Tx) error {
		var err error
		if c, err = tx.CreateCollection(ctx, "c", nil); err != nil {
			return err
		}
		if x, err = tx.CreateCollection(ctx, "x", nil); err != nil {
			return err
		}
		return tx.Insert(ctx, "c", doc(1, "a"))
	})
	if e.Changes().LastLSN("db") == 0 {
		t.Fatal("no LSN noted")
	}
	seq := e.Changes().Stats().Next
	if err := e.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	got := readChanges(t, e.Changes(), seq)
	if len(got) != 2 {
		t.Fatalf("dropDatabase appended %d entries", len(got))
	}
	for _, ent := range got {
		if ent.DB != "db" || ent.Branch != DefaultBranch || ent.LSN != 0 || ent.At == 0 {
			t.Fatalf("entry %+v", ent)
		}
	}
	checkEvents(t, "the drops", got[0], ChangeEvent{Op: "drop", Coll: "c", UUID: c.UUID}, ChangeEvent{Op: "drop", Coll: "x", UUID: x.UUID})
	checkEvents(t, "dropDatabase", got[1], ChangeEvent{Op: "dropDatabase"})
	if n := e.Changes().LastLSN("db"); n != 0 {
		t.Fatalf("LastLSN %d after the drop", n)
	}
	if s := markSeq(t, filepath.Join(dir, "changes")); s != e.Changes().Stats().Next {
		t.Fatalf("the drop's entries are not synced: mark at %d, next %d", s, e.Changes().Stats().Next)
	}
	wantNoEntry(t, e, "dropping a database that does not exist", func() {
		if err := e.DropDatabase("none"); err != nil {
			t.Fatal(err)
		}
	})

	d, err := e.Database(ctx, "db", true)
	if err != nil {
		t.Fatal(err)
	}
	var fresh []ChangeEntry
	for i := int32(1); i <= 3; i++ {
		fresh = append(fresh, writeOne(t, e, d, DefaultBranch, func(tx *Tx) error { return insertDocs(tx, doc(i, "again")) }))
	}
	if fresh[0].LSN != 1 || fresh[2].LSN != 3 || e.Changes().LastLSN("db") != 3 {
		t.Fatalf("the new database's lsns %d..%d, LastLSN %d", fresh[0].LSN, fresh[2].LSN, e.Changes().LastLSN("db"))
	}
	crashed := crashCopy(t, dir)
	cutChangeLog(t, crashed, fresh[1].Seq, false)
	e2 := openEngine(t, crashed, Options{})
	defer e2.Close()
	all := entriesOf(t, e2.Changes(), "db")
	checkSameEntries(t, "after the crash", all[len(all)-3:], fresh)
	if len(all) != 6 {
		t.Fatalf("%d entries of db, want 6", len(all))
	}
}

// TestChangeCaptureDropDatabaseAfterUnsyncedWrites: the events of writes
// acknowledged before they were durable (w: 0, j: false) come before the
// drop of their database in the change log, not after it, and leave no
// LSN noted for the dropped name.
func TestChangeCaptureDropDatabaseAfterUnsyncedWrites(t *testing.T) {
	e, d := csEngine(t, t.TempDir())
	mustWrite(t, d, func(tx *Tx) error { _, err := tx.CreateCollection(ctx, "c", nil); return err })
	seq := e.Changes().Stats().Next
	for i := int32(1); i <= 3; i++ {
		if err := d.Write(NoSync(ctx), func(tx *Tx) error { return tx.Insert(ctx, "c", doc(i, "unsynced")) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, ent := range readChanges(t, e.Changes(), seq) {
		ops = append(ops, opsOf(ent)...)
	}
	want := []string{"insert c", "insert c", "insert c", "drop c", "dropDatabase "}
	if !slices.Equal(ops, want) {
		t.Fatalf("change log after the drop: %v, want %v", ops, want)
	}
	if n := e.Changes().LastLSN("db"); n != 0 {
		t.Fatalf("LastLSN %d after the drop", n)
	}
}
