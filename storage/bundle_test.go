package storage

import (
	"bytes"
	"errors"
	"maps"
	"testing"
)

func allowAll(PushUpdate) error { return nil }

func writeBundle(t *testing.T, d *Database, since []string) ([]byte, BundleHeader) {
	t.Helper()
	var buf bytes.Buffer
	hdr, err := d.WriteBundle(ctx, &buf, since)
	if err != nil {
		t.Fatalf("write bundle: %v", err)
	}
	return buf.Bytes(), hdr
}

func restoreBundle(t *testing.T, e *Engine, name string, b []byte) []RefUpdate {
	t.Helper()
	_, moved, err := e.RestoreBundle(ctx, name, bytes.NewReader(b), allowAll)
	if err != nil {
		t.Fatalf("restore bundle into %s: %v", name, err)
	}
	return moved
}

// TestBundleRoundTripKeepsCommitIDs: a full bundle restored on another
// engine has every branch, tag and commit id, and the documents; an
// incremental bundle holds fewer chunks and moves the restored copy
// forward; restoring it twice changes nothing.
func TestBundleRoundTripKeepsCommitIDs(t *testing.T) {
	a, _ := remoteFixture(t, 5000)
	if _, err := a.CreateBranch(ctx, "feature", Revision{Branch: DefaultBranch}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTag(ctx, "v1", Revision{Branch: DefaultBranch}, "first"); err != nil {
		t.Fatal(err)
	}
	full, hdr := writeBundle(t, a, nil)
	if len(hdr.Refs) != 3 || hdr.Chunks == 0 || len(hdr.Base) != 0 {
		t.Fatalf("full bundle header: %+v", hdr)
	}
	e := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e.Close() })
	restoreBundle(t, e, "copy", full)
	b, err := e.Database(ctx, "copy", false)
	if err != nil || b == nil {
		t.Fatalf("open the restored database: %v", err)
	}
	for _, br := range []string{"main", "feature"} {
		if headID(t, b, br) != headID(t, a, br) {
			t.Errorf("branch %s: %s restored, %s made", br, headID(t, b, br), headID(t, a, br))
		}
	}
	if !maps.Equal(contents(t, b, "c"), contents(t, a, "c")) {
		t.Error("the restored documents differ")
	}
	if rs, _ := b.Remotes(ctx); len(rs) != 0 {
		t.Errorf("a restored bundle has remotes: %+v", rs)
	}

	mustWrite(t, a, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(100000, "new")) })
	commitAs(t, a, "one more")
	inc, ihdr := writeBundle(t, a, hdr.RefAddrs())
	if ihdr.Chunks == 0 || ihdr.Chunks*4 > hdr.Chunks {
		t.Errorf("incremental bundle holds %d chunks, the full one %d", ihdr.Chunks, hdr.Chunks)
	}
	if _, _, err := openEngine(t, t.TempDir(), Options{}).RestoreBundle(ctx, "fresh", bytes.NewReader(inc), allowAll); !errors.Is(err, ErrBundleBase) {
		t.Errorf("an incremental bundle into a new database: %v, want ErrBundleBase", err)
	}
	moved := restoreBundle(t, e, "copy", inc)
	if len(moved) != 1 || moved[0].Name != "main" || headID(t, b, "main") != headID(t, a, "main") {
		t.Fatalf("incremental restore moved %+v; main %s, want %s", moved, headID(t, b, "main"), headID(t, a, "main"))
	}
	if got := contents(t, b, "c")[100000]; got != "new" {
		t.Errorf("document 100000 after the incremental restore: %q", got)
	}
	if moved := restoreBundle(t, e, "copy", inc); len(moved) != 0 {
		t.Errorf("restoring the same bundle again moved %+v", moved)
	}
}

// TestBundleRefusesWhatItCannotTrust: a damaged header, a damaged chunk,
// a file cut short, and a restore that is no fast-forward change nothing.
func TestBundleRefusesWhatItCannotTrust(t *testing.T) {
	a, _ := remoteFixture(t, 50)
	full, hdr := writeBundle(t, a, nil)
	e := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e.Close() })
	damage := func(at int) []byte {
		b := bytes.Clone(full)
		b[at] ^= 0xff
		return b
	}
	for name, b := range map[string][]byte{
		"header":  damage(bundlePrefixSize + 3),
		"chunk":   damage(len(full) - 5),
		"cut":     full[:len(full)-10],
		"longer":  append(bytes.Clone(full), 0),
		"nothing": nil,
	} {
		if _, _, err := e.RestoreBundle(ctx, "x", bytes.NewReader(b), allowAll); !errors.Is(err, ErrBadBundle) {
			t.Errorf("%s: %v, want ErrBadBundle", name, err)
		}
		if names, _ := e.DatabaseNames(); len(names) != 0 {
			t.Fatalf("%s: a refused bundle left databases %v", name, names)
		}
	}
	restoreBundle(t, e, "copy", full)
	b, _ := e.Database(ctx, "copy", false)
	mustWrite(t, b, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(7000, "theirs")) })
	commitAs(t, b, "diverge")
	mustWrite(t, a, func(tx *Tx) error { return tx.Insert(ctx, "c", doc(8000, "ours")) })
	commitAs(t, a, "diverge too")
	inc, _ := writeBundle(t, a, hdr.RefAddrs())
	if _, _, err := e.RestoreBundle(ctx, "copy", bytes.NewReader(inc), allowAll); !errors.Is(err, ErrNotFastForward) {
		t.Errorf("a diverged restore: %v, want ErrNotFastForward", err)
	}
	if _, ok := contents(t, b, "c")[8000]; ok {
		t.Error("a refused restore changed the documents")
	}
}
