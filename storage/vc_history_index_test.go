package storage

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dolthub/dolt/go/store/hash"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// historyOf lists the messages of the commits that changed document id
// of collection c on main.
func historyOf(t *testing.T, d *Database, id int32) []string {
	t.Helper()
	log, err := d.Log(ctx, LogOptions{From: Revision{Branch: "main"}, Collections: []string{"c"}, IDs: []bsoncore.Value{idValue(id)}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range log {
		out = append(out, c.Message)
	}
	return out
}

func commitMsg(t *testing.T, d *Database, msg string) {
	t.Helper()
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: msg}); err != nil {
		t.Fatal(err)
	}
}

// TestHistoryIndexPersists checks that a history query's summaries are
// kept in history.idx and serve the same query after a restart, that a
// torn or damaged tail is cut off and a file of another format set
// aside, each time with the same answers.
func TestHistoryIndexPersists(t *testing.T) {
	dir := t.TempDir()
	e, d := engineDatabase(t, dir, Options{}, true)
	for i := range 12 {
		put(t, d, "main", docKV(int32(i%3), "n", i))
		commitMsg(t, d, "c"+string(rune('a'+i)))
	}
	want := historyOf(t, d, 1)
	if !slices.Equal(want, []string{"ck", "ch", "ce", "cb"}) {
		t.Fatalf("history of 1: %v", want)
	}
	if d.historyIdx.computed != 13 { // 12 commits and the initial one
		t.Errorf("summaries computed: %d, want 13", d.historyIdx.computed)
	}
	e.Close()
	path := filepath.Join(dir, "db", historyIndexFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no history index: %v", err)
	}

	// reopen opens the data directory again, asks the same question and
	// says how many summaries it computed.
	reopen := func(what string) int {
		t.Helper()
		e, d := engineDatabase(t, dir, Options{}, false)
		defer e.Close()
		if got := historyOf(t, d, 1); !slices.Equal(got, want) {
			t.Errorf("%s: history %v, want %v", what, got, want)
		}
		return d.historyIdx.computed
	}
	if n := reopen("after a restart"); n != 0 {
		t.Errorf("after a restart %d summaries were computed again, want none", n)
	}
	// A torn last record: it is cut off and computed again.
	os.WriteFile(path, data[:len(data)-5], 0o644)
	if n := reopen("after a torn record"); n != 1 {
		t.Errorf("after a torn record %d summaries were computed, want 1", n)
	}
	// A damaged byte in the first record: everything from it is dropped.
	bad := slices.Clone(data)
	bad[30] ^= 0xff
	os.WriteFile(path, bad, 0o644)
	if n := reopen("after damage"); n != 13 {
		t.Errorf("after damage %d summaries were computed, want 13", n)
	}
	// Another format version: set aside and built again.
	other := slices.Clone(data)
	other[8] = 9
	os.WriteFile(path, other, 0o644)
	reopen("after a newer format")
	if got, _ := os.ReadFile(path); len(got) < 12 || got[8] != 1 {
		t.Errorf("the index of another version was not built again: % x", got[:min(len(got), 12)])
	}
}

// TestHistoryIndexWholeCollections checks the summaries that cannot list
// documents: a commit that changed more than they list, and collections
// made and dropped.
func TestHistoryIndexWholeCollections(t *testing.T) {
	d := openDatabase(t, Options{})
	put(t, d, "main", docKV(1, "n", 0))
	commitMsg(t, d, "one")
	err := d.WriteBranch(ctx, "main", func(tx *Tx) error {
		for i := range summaryMaxKeys + 10 {
			if err := tx.Insert(ctx, "c", docKV(int32(1000+i), "n", i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	commitMsg(t, d, "many")
	put(t, d, "main", docKV(1, "n", 1))
	commitMsg(t, d, "two")
	head, _ := d.headCommit(ctx, "main")
	s, err := d.summary(ctx, head.Addr())
	if err != nil {
		t.Fatal(err)
	}
	many, _ := d.summary(ctx, s.parents[0])
	if !many.colls["c"].whole {
		t.Errorf("a commit of %d documents is summarised %+v, want whole", summaryMaxKeys+10, many.colls["c"])
	}
	if got := historyOf(t, d, 1); !slices.Equal(got, []string{"two", "one"}) {
		t.Errorf("history of 1 across the large commit: %v", got)
	}
	if got := historyOf(t, d, 1500); !slices.Equal(got, []string{"many"}) {
		t.Errorf("history of 1500: %v", got)
	}
	// Dropped, then made again with the document.
	if err := d.WriteBranch(ctx, "main", func(tx *Tx) error { return tx.DropCollection("c") }); err != nil {
		t.Fatal(err)
	}
	commitMsg(t, d, "drop")
	put(t, d, "main", docKV(7, "n", 7))
	commitMsg(t, d, "again")
	if got := historyOf(t, d, 1); !slices.Equal(got, []string{"drop", "two", "one"}) {
		t.Errorf("history of 1 through the drop: %v", got)
	}
	if got := historyOf(t, d, 7); !slices.Equal(got, []string{"again"}) {
		t.Errorf("history of 7: %v", got)
	}
}

// FuzzHistoryIndexRecords feeds the index's reader damaged files: it
// keeps what is whole and never fails otherwise.
func FuzzHistoryIndexRecords(f *testing.F) {
	s := &commitSummary{height: 3, at: 1700000000000, parents: make([]hash.Hash, 2),
		colls: map[string]collectionChange{"a": {keys: []uint64{1, 5, 9}}, "b": {whole: true}}}
	f.Add(appendSummaryRecord(nil, hash.Hash{1}, s))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ix := &historyIndex{byAddr: map[hash.Hash]*commitSummary{}}
		if n := ix.parse(data); n > len(data) {
			t.Fatalf("parsed %d of %d bytes", n, len(data))
		}
	})
}
