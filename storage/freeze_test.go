package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// dirState lists every file of dir with its size and modification time.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		state[path] = fmt.Sprint(info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if de.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestFreezeHoldsWritesAndKeepsTheFilesStill(t *testing.T) {
	dir := t.TempDir()
	e, d := engineDatabase(t, dir, Options{}, true)
	defer e.Close()
	for i := range int32(10) {
		put(t, d, "main", doc(i, "before"))
	}
	if n, err := e.Freeze(ctx); err != nil || n != 1 {
		t.Fatalf("freeze: %d %v", n, err)
	}
	still := dirState(t, dir)
	wrote := make(chan error, 1)
	go func() {
		wrote <- d.Write(ctx, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(10, "during")) })
	}()
	committed := make(chan error, 1)
	go func() {
		_, err := d.Commit(ctx, "main", CommitOptions{Message: "during"})
		committed <- err
	}()
	snap, err := d.BranchSnapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, found, err := snap.Get(ctx, "c", doc(3, "").Lookup("_id")); err != nil || !found {
		t.Fatalf("a read while frozen: %v %v", found, err)
	}
	if n, err := e.Freeze(ctx); err != nil || n != 2 {
		t.Fatalf("a second freeze: %d %v", n, err)
	}
	time.Sleep(100 * time.Millisecond) // what would write has had its chance
	if n, err := e.Thaw(); err != nil || n != 1 {
		t.Fatalf("thaw: %d %v", n, err)
	}
	select {
	case err := <-wrote:
		t.Fatalf("a write went through a frozen data directory: %v", err)
	case err := <-committed:
		t.Fatalf("a commit went through a frozen data directory: %v", err)
	default:
	}
	if got := dirState(t, dir); fmt.Sprint(got) != fmt.Sprint(still) {
		t.Fatalf("files changed while frozen:\nbefore %v\nafter  %v", still, got)
	}
	if n, err := e.Thaw(); err != nil || n != 0 {
		t.Fatalf("last thaw: %d %v", n, err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := <-committed; err != nil && !errors.Is(err, ErrNothingToCommit) {
		t.Fatal(err)
	}
	if _, err := e.Thaw(); !errors.Is(err, ErrNotFrozen) {
		t.Fatalf("thaw of a directory not frozen: %v", err)
	}
}

func TestFreezeWaitsForTheWritesInside(t *testing.T) {
	e, d := engineDatabase(t, t.TempDir(), Options{}, true)
	defer e.Close()
	inner, leave, err := d.enterGate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := e.Freeze(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a freeze past its deadline: %v", err)
	}
	put(t, d, "main", doc(1, "gate open again"))
	froze := make(chan error, 1)
	go func() {
		_, err := e.Freeze(ctx)
		froze <- err
	}()
	for !e.gate.closedNow() {
		time.Sleep(time.Millisecond)
	}
	// An operation inside passes the closed gate with its context.
	if err := d.Checkpoint(inner); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-froze:
		t.Fatalf("froze with an operation inside: %v", err)
	default:
	}
	leave()
	if err := <-froze; err != nil {
		t.Fatal(err)
	}
	if e.FreezeCount() != 1 {
		t.Fatalf("freeze count %d", e.FreezeCount())
	}
	e.Thaw()
}

func TestACopyOfAFrozenDirectoryOpens(t *testing.T) {
	dir := t.TempDir()
	e, d := engineDatabase(t, dir, Options{}, true)
	for i := range int32(20) {
		put(t, d, "main", doc(i, "kept"))
	}
	if _, err := d.Commit(ctx, "main", CommitOptions{Message: "twenty"}); err != nil {
		t.Fatal(err)
	}
	put(t, d, "main", doc(20, "uncommitted"))
	if _, err := e.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	copied := t.TempDir()
	copyDir(t, dir, copied)
	e.Thaw()
	put(t, d, "main", doc(21, "after the copy"))
	e.Close()

	e2, d2 := engineDatabase(t, copied, Options{}, false)
	defer e2.Close()
	snap, err := d2.BranchSnapshot(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	for i := range int32(22) {
		_, found, err := snap.Get(ctx, "c", doc(i, "").Lookup("_id"))
		if err != nil || found != (i <= 20) {
			t.Fatalf("document %d in the copy: found %v, %v", i, found, err)
		}
	}
	if log, err := d2.Log(ctx, LogOptions{From: Revision{Branch: DefaultBranch}}); err != nil || len(log) != 2 {
		t.Fatalf("the copy's commits: %d %v", len(log), err)
	}
}
