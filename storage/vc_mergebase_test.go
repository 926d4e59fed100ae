package storage

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// gitTwin builds one commit graph both in a database and in a Git
// repository, where the file named by a document's _id holds its value,
// and checks that each merge goes as Git's does: clean or conflicting on
// the same documents, with the same contents after.
type gitTwin struct {
	t   *testing.T
	d   *Database
	dir string
}

func newGitTwin(t *testing.T) *gitTwin {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("these tests compare merges with git, which is not installed")
	}
	e := openEngine(t, t.TempDir(), Options{})
	t.Cleanup(func() { e.Close() })
	d, _ := e.Database(ctx, "db", true)
	w := &gitTwin{t: t, d: d, dir: t.TempDir()}
	w.git("init", "-q", "-b", DefaultBranch)
	w.git("commit", "-q", "--allow-empty", "-m", "init") // the database's first commit
	return w
}

func (w *gitTwin) run(args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", w.dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *gitTwin) git(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	if err != nil {
		w.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (w *gitTwin) set(branch string, id int32, v string) {
	w.t.Helper()
	put(w.t, w.d, branch, doc(id, v))
	w.git("checkout", "-q", branch)
	if err := os.WriteFile(filepath.Join(w.dir, fmt.Sprint(id)), []byte(v+"\n"), 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.git("add", fmt.Sprint(id))
}

func (w *gitTwin) del(branch string, id int32) {
	w.t.Helper()
	if err := w.d.WriteBranch(ctx, branch, func(tx *Tx) error { return tx.Delete(ctx, "c", idValue(id)) }); err != nil {
		w.t.Fatal(err)
	}
	w.git("checkout", "-q", branch)
	w.git("rm", "-q", fmt.Sprint(id))
}

func (w *gitTwin) commit(branch, msg string) {
	w.t.Helper()
	if _, err := w.d.Commit(ctx, branch, CommitOptions{Message: msg}); err != nil {
		w.t.Fatalf("commit on %s: %v", branch, err)
	}
	w.git("checkout", "-q", branch)
	w.git("commit", "-q", "-m", msg)
}

func (w *gitTwin) branch(name, from string) {
	w.t.Helper()
	if _, err := w.d.CreateBranch(ctx, name, Revision{Branch: from}); err != nil {
		w.t.Fatal(err)
	}
	w.git("branch", name, from)
}

// merge merges from into into in both and returns the conflicting _ids,
// having checked that Git finds the same ones.
func (w *gitTwin) merge(into, from string) []int32 {
	w.t.Helper()
	_, err := w.d.Merge(ctx, into, Revision{Branch: from}, MergeOptions{})
	var got []int32
	if errors.Is(err, ErrMergeConflicts) {
		confs, err := w.d.Conflicts(ctx, into, "c")
		if err != nil {
			w.t.Fatal(err)
		}
		for _, c := range confs {
			got = append(got, c.ID.Int32())
		}
	} else if err != nil {
		w.t.Fatalf("merge %s into %s: %v", from, into, err)
	}
	w.git("checkout", "-q", into)
	var want []int32
	if out, err := w.run("merge", "-q", "--no-edit", from); err != nil {
		want = w.unmergedIDs()
		if len(want) == 0 {
			w.t.Fatalf("git merge %s into %s: %v\n%s", from, into, err, out)
		}
	}
	if !reflect.DeepEqual(got, want) {
		w.t.Fatalf("merge %s into %s: conflicts on %v, Git's on %v", from, into, got, want)
	}
	if len(got) == 0 {
		w.same(into)
	}
	return got
}

func (w *gitTwin) unmergedIDs() []int32 {
	var ids []int32
	for _, f := range strings.Fields(w.git("diff", "--name-only", "--diff-filter=U")) {
		id, err := strconv.Atoi(f)
		if err != nil {
			w.t.Fatalf("unmerged file %q", f)
		}
		ids = append(ids, int32(id))
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// settle resolves every conflict of a stopped merge on branch by taking
// one side (ResolveOurs or ResolveTheirs) and commits the merge.
func (w *gitTwin) settle(branch, side string) {
	w.t.Helper()
	for _, id := range w.unmergedIDs() {
		if err := w.d.ResolveConflict(ctx, branch, "c", idValue(id), side, nil); err != nil {
			w.t.Fatal(err)
		}
		if _, err := w.run("checkout", "--"+side, "--", fmt.Sprint(id)); err != nil {
			w.git("rm", "-q", fmt.Sprint(id)) // the document is absent on that side
		}
	}
	if _, err := w.d.MergeContinue(ctx, branch, CommitOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.git("commit", "-q", "-a", "--no-edit")
	w.same(branch)
}

// same checks that branch holds the same documents in both.
func (w *gitTwin) same(branch string) {
	w.t.Helper()
	want := map[int32]string{}
	for _, f := range strings.Fields(w.git("ls-tree", "--name-only", branch)) {
		id, _ := strconv.Atoi(f)
		want[int32(id)] = strings.TrimSuffix(w.git("show", branch+":"+f), "\n")
	}
	snap, err := w.d.BranchSnapshot(ctx, branch)
	if err != nil {
		w.t.Fatal(err)
	}
	got := map[int32]string{}
	for id, doc := range scanDocs(w.t, snap, "c") {
		got[id] = doc.Lookup("v").StringValue()
	}
	if !reflect.DeepEqual(got, want) {
		w.t.Fatalf("%s holds %v, Git's %v", branch, got, want)
	}
}

// sameAheadBehind checks AheadBehind against git rev-list.
func (w *gitTwin) sameAheadBehind(base, target string) {
	w.t.Helper()
	ahead, behind, err := w.d.AheadBehind(ctx, Revision{Branch: base}, Revision{Branch: target})
	if err != nil {
		w.t.Fatal(err)
	}
	want := w.git("rev-list", "--left-right", "--count", base+"..."+target)
	if got := fmt.Sprintf("%d\t%d\n", behind, ahead); got != want {
		w.t.Fatalf("%s...%s: behind, ahead %q, Git's %q", base, target, got, want)
	}
}

// An integration branch that merged main and feat holds nothing main lacks
// once main has merged feat: merging main in is clean, though each of the
// two merge bases alone (main's and feat's commits that integ merged)
// would make a false conflict.
func TestCrissCrossMergeOfAnIntegrationBranch(t *testing.T) {
	w := newGitTwin(t)
	w.set("main", 1, "a0")
	w.set("main", 2, "b0")
	w.commit("main", "base")
	w.branch("feat", "main")
	w.branch("integ", "main")
	w.set("feat", 1, "a1")
	w.commit("feat", "feat a1")
	w.set("main", 2, "b1")
	w.commit("main", "main b1")
	for _, from := range []string{"main", "feat"} {
		if c := w.merge("integ", from); len(c) != 0 {
			t.Fatalf("merge %s into integ: conflicts %v", from, c)
		}
	}
	w.set("main", 2, "b2")
	w.commit("main", "main b2")
	w.set("feat", 1, "a2")
	w.commit("feat", "feat a2")
	if c := w.merge("main", "feat"); len(c) != 0 {
		t.Fatalf("merge feat into main: conflicts %v", c)
	}
	w.sameAheadBehind("integ", "main")
	if c := w.merge("integ", "main"); len(c) != 0 {
		t.Fatalf("merge main into integ: conflicts %v", c)
	}
	w.sameAheadBehind("main", "integ")
}

// crissCross makes branches x and y each merge the other's first commit,
// so that they have two merge bases: x1 and y1. Conflicts are settled
// taking one side: settleX in x's merge, settleY in y's.
func crissCross(w *gitTwin, x1, y1 map[int32]string, settleX, settleY string) {
	w.t.Helper()
	for _, side := range []struct {
		name string
		docs map[int32]string
	}{{"x", x1}, {"y", y1}} {
		w.branch(side.name, "main")
		for id, v := range side.docs {
			w.set(side.name, id, v)
		}
		w.commit(side.name, side.name+"1")
		w.branch(side.name+"1", side.name)
	}
	for _, m := range [][3]string{{"x", "y1", settleX}, {"y", "x1", settleY}} {
		if len(w.merge(m[0], m[1])) > 0 {
			w.settle(m[0], m[2])
		}
	}
}

// A classic criss-cross: a document both branches changed after it still
// conflicts, others merge.
func TestCrissCrossKeepsRealConflicts(t *testing.T) {
	w := newGitTwin(t)
	w.set("main", 1, "a0")
	w.set("main", 2, "b0")
	w.set("main", 3, "c0")
	w.commit("main", "base")
	crissCross(w, map[int32]string{1: "x1"}, map[int32]string{2: "y1"}, ResolveOurs, ResolveOurs)
	w.set("x", 1, "x3")
	w.set("x", 3, "x3")
	w.commit("x", "x3")
	w.set("y", 1, "y3")
	w.set("y", 2, "y3")
	w.commit("y", "y3")
	w.sameAheadBehind("x", "y")
	if c := w.merge("x", "y"); !reflect.DeepEqual(c, []int32{1}) {
		t.Fatalf("conflicts %v, want on _id 1", c)
	}
	w.settle("x", ResolveTheirs)
}

// The two merge bases conflict with each other; how each branch settled
// that decides the outer merge.
func TestCrissCrossWithConflictingMergeBases(t *testing.T) {
	for _, tc := range []struct {
		name             string
		settleX, settleY string
		conflicts        []int32
	}{
		{"settled apart", ResolveOurs, ResolveOurs, []int32{1}}, // x holds x1, y holds y1
		{"settled alike", ResolveTheirs, ResolveOurs, nil},      // both hold y1
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGitTwin(t)
			w.set("main", 1, "a0")
			w.set("main", 2, "b0")
			w.commit("main", "base")
			crissCross(w, map[int32]string{1: "x1"}, map[int32]string{1: "y1"}, tc.settleX, tc.settleY)
			w.set("y", 2, "y4")
			w.commit("y", "y4")
			if c := w.merge("x", "y"); !reflect.DeepEqual(c, tc.conflicts) {
				t.Fatalf("conflicts %v, want %v", c, tc.conflicts)
			}
		})
	}
}

// The merge bases added a document in different ways, and both branches
// settled on one; deleting it on one of them then conflicts with keeping
// it on the other, as the virtual base holds neither.
func TestCrissCrossDeleteOfADocumentTheBasesAdded(t *testing.T) {
	w := newGitTwin(t)
	w.set("main", 1, "a0")
	w.commit("main", "base")
	crissCross(w, map[int32]string{2: "x1"}, map[int32]string{2: "y1"}, ResolveOurs, ResolveTheirs)
	w.del("y", 2)
	w.commit("y", "y deletes 2")
	if c := w.merge("x", "y"); !reflect.DeepEqual(c, []int32{2}) {
		t.Fatalf("conflicts %v, want on _id 2", c)
	}
	w.settle("x", ResolveTheirs)
}
