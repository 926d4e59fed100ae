package server

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/query"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestEndedCursorLeavesNoSpillFile: an aggregation cursor killed or
// expired midway through merging a spilled sort closes its spill files.
// They are unlinked as soon as made, so what could be left is an open
// descriptor on a deleted file in the temporary directory.
func TestEndedCursorLeavesNoSpillFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts open files through /proc/self/fd")
	}
	for name, end := range map[string]func(r *cursorRegistry, c *cursor){
		"killed":  func(r *cursorRegistry, c *cursor) { r.remove(c.id) },
		"expired": func(r *cursorRegistry, c *cursor) { r.reapIdle(0) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", dir)
			r := newCursorRegistry()
			c, err := r.add(cursorPlace{db: "db", rev: "main", coll: "c"}, "db.c", spillingSource(t), false, 1, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, done, err := fillBatch(context.Background(), c.src, 10); err != nil || done {
				t.Fatalf("first batch: done %v, %v", done, err)
			}
			if openUnder(t, dir) == 0 {
				t.Fatal("nothing spilled: the test proves nothing")
			}
			end(r, c)
			if r.count() != 0 {
				t.Fatal("the cursor is still registered")
			}
			if n := openUnder(t, dir); n != 0 {
				t.Errorf("%d spill files still open", n)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("%d files left in the temporary directory", len(left))
			}
		})
	}
}

// spillingSource is an aggregation whose $sort spills several runs.
func spillingSource(t *testing.T) *peekSource {
	t.Helper()
	pipeline := bsoncore.NewArrayBuilder().AppendDocument(bsoncore.NewDocumentBuilder().
		AppendDocument("$sort", bsoncore.NewDocumentBuilder().AppendInt32("k", 1).Build()).Build()).Build()
	p, err := query.CompilePipelineOpts(pipeline, query.PipelineOptions{AllowDiskUse: true, MemoryLimit: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]bsoncore.Document, 5000)
	for i := range docs {
		docs[i] = bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i)).AppendInt32("k", int32(i%7)).
			AppendString("pad", "padding").Build()
	}
	return &peekSource{src: p.Run(query.NewSliceStream(docs))}
}

// openUnder counts the process's open files under dir.
func openUnder(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}
