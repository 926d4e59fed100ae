package storage

import (
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

var vcModelSeeds = flag.Int("vcmodel.seeds", 6, "seeds TestVersionControlMatchesAModel runs")

// TestVersionControlMatchesAModel runs random writes, commits, branch
// creations and merges (of branch heads and of older commits, so
// criss-crosses arise) with conflicts settled or aborted, against a model
// that finds merge bases from whole ancestor sets and merges per document.
// A failure names its seed: rerun it with -run 'TestVersionControlMatchesAModel/SEED'.
func TestVersionControlMatchesAModel(t *testing.T) {
	multiBase := 0
	for seed := int64(1); seed <= int64(*vcModelSeeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { multiBase += runVCModel(t, seed) })
	}
	t.Logf("%d merges had several merge bases", multiBase)
	if !t.Failed() && multiBase == 0 {
		t.Fatal("no merge had several merge bases: the test does not reach criss-crosses")
	}
}

type modelKey struct {
	coll string
	id   int32
}

// modelDoc is a document's fields a and b; documents have both.
type modelDoc [2]int32

// markerDoc stands for the empty document a virtual base holds where its
// bases added a document in different ways: no branch holds it, as
// writes use values 0 to 3.
var markerDoc = modelDoc{-1, -1}

type modelDocs map[modelKey]modelDoc

func (m modelDocs) clone() modelDocs {
	out := make(modelDocs, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type modelCommit struct {
	parents []string
	height  int
	docs    modelDocs
}

type vcModel struct {
	commits map[string]*modelCommit
	heads   map[string]string    // branch -> commit
	work    map[string]modelDocs // branch -> working documents
}

func (m *vcModel) branches() []string {
	names := make([]string, 0, len(m.heads))
	for n := range m.heads {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (m *vcModel) addCommit(id string, parents []string, docs modelDocs) {
	h := 0
	for _, p := range parents {
		h = max(h, m.commits[p].height)
	}
	m.commits[id] = &modelCommit{parents: parents, height: h + 1, docs: docs.clone()}
}

// ancestors is the commits reachable from a set, the set included.
func (m *vcModel) ancestors(from []string) map[string]bool {
	seen := map[string]bool{}
	stack := append([]string(nil), from...)
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !seen[c] {
			seen[c] = true
			stack = append(stack, m.commits[c].parents...)
		}
	}
	return seen
}

// mergeBases are the common ancestors that are no ancestor of another
// common one, highest first, then by id (as the storage walk orders them).
func (m *vcModel) mergeBases(left, right []string) []string {
	l, r := m.ancestors(left), m.ancestors(right)
	var common []string
	for c := range l {
		if r[c] {
			common = append(common, c)
		}
	}
	var bases []string
	for _, c := range common {
		best := true
		for _, o := range common {
			if o != c && m.ancestors(m.commits[o].parents)[c] {
				best = false
				break
			}
		}
		if best {
			bases = append(bases, c)
		}
	}
	sort.Slice(bases, func(i, j int) bool {
		hi, hj := m.commits[bases[i]].height, m.commits[bases[j]].height
		return hi > hj || hi == hj && bases[i] < bases[j]
	})
	return bases
}

// baseDocs merges merge bases into a virtual base as Git's recursive
// strategy does; what they cannot merge keeps their own base's version, or
// becomes markerDoc where that lacks it.
func (m *vcModel) baseDocs(bases []string) modelDocs {
	if len(bases) == 0 {
		return modelDocs{}
	}
	docs := m.commits[bases[0]].docs
	for i := 1; i < len(bases); i++ {
		inner := m.baseDocs(m.mergeBases(bases[:i], bases[i:i+1]))
		docs, _ = mergeModelDocs(inner, docs, m.commits[bases[i]].docs, true)
	}
	return docs
}

// mergeModelDocs merges per document and then per field; a document that
// cannot merge keeps ours and is a conflict, or with keepBase gets the
// base's version (markerDoc when the base lacks it).
func mergeModelDocs(base, ours, theirs modelDocs, keepBase bool) (modelDocs, []modelKey) {
	out := modelDocs{}
	var conflicts []modelKey
	for _, k := range unionKeys(base, ours, theirs) {
		b, inBase := base[k]
		o, inOurs := ours[k]
		t, inTheirs := theirs[k]
		v, present, ok := mergeModelDoc(b, o, t, inBase, inOurs, inTheirs)
		switch {
		case !ok && keepBase && inBase:
			v, present = b, true
		case !ok && keepBase:
			v, present = markerDoc, true
		case !ok:
			v, present = o, inOurs
			conflicts = append(conflicts, k)
		}
		if present {
			out[k] = v
		}
	}
	return out, conflicts
}

func mergeModelDoc(b, o, t modelDoc, inBase, inOurs, inTheirs bool) (v modelDoc, present, ok bool) {
	switch {
	case inOurs == inTheirs && o == t:
		return o, inOurs, true
	case inOurs == inBase && o == b:
		return t, inTheirs, true
	case inTheirs == inBase && t == b:
		return o, inOurs, true
	case !inOurs || !inTheirs:
		return v, false, false // deleted against changed
	}
	for f := range v {
		switch {
		case o[f] == t[f]:
			v[f] = o[f]
		case inBase && o[f] == b[f]:
			v[f] = t[f]
		case inBase && t[f] == b[f]:
			v[f] = o[f]
		default:
			return v, false, false
		}
	}
	return v, true, true
}

func unionKeys(sets ...modelDocs) []modelKey {
	seen := map[modelKey]bool{}
	var keys []modelKey
	for _, s := range sets {
		for k := range s {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sortModelKeys(keys)
	return keys
}

func sortModelKeys(keys []modelKey) {
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].coll < keys[j].coll || keys[i].coll == keys[j].coll && keys[i].id < keys[j].id
	})
}

// vcModelRun drives one seed's database and model side by side.
type vcModelRun struct {
	t         *testing.T
	seed      int64
	step      int
	rng       *rand.Rand
	d         *Database
	m         *vcModel
	multiBase int // merges that had several merge bases
}

var vcModelColls = []string{"c", "d"}

func runVCModel(t *testing.T, seed int64) int {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	d, _ := e.Database(ctx, "db", true)
	r := &vcModelRun{t: t, seed: seed, rng: rand.New(rand.NewSource(seed)), d: d,
		m: &vcModel{commits: map[string]*modelCommit{}, heads: map[string]string{}, work: map[string]modelDocs{}}}
	first, err := d.headCommit(ctx, DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	r.m.addCommit(first.Addr().String(), nil, modelDocs{})
	r.m.heads[DefaultBranch], r.m.work[DefaultBranch] = first.Addr().String(), modelDocs{}
	for r.step = 0; r.step < 150; r.step++ {
		branches := r.m.branches()
		b := branches[r.rng.Intn(len(branches))]
		switch n := r.rng.Intn(100); {
		case n < 45:
			r.write(b)
		case n < 65:
			r.commit(b)
		case n < 72 && len(branches) < 5:
			r.branch(fmt.Sprintf("b%d", r.step), b)
		default:
			r.merge(b, branches[r.rng.Intn(len(branches))])
		}
		if r.step%10 == 0 {
			r.check()
		}
	}
	r.check()
	return r.multiBase
}

func (r *vcModelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d step %d: %s", r.seed, r.step, fmt.Sprintf(format, args...))
}

// write inserts, updates or deletes one document of a branch.
func (r *vcModelRun) write(branch string) {
	k := modelKey{vcModelColls[r.rng.Intn(len(vcModelColls))], int32(r.rng.Intn(5))}
	work := r.m.work[branch]
	old, exists := work[k]
	v := old
	del := exists && r.rng.Intn(4) == 0
	switch {
	case !exists:
		v = modelDoc{int32(r.rng.Intn(4)), int32(r.rng.Intn(4))}
	case !del:
		v[r.rng.Intn(2)] = int32(r.rng.Intn(4)) // small values: both sides often agree
	}
	err := r.d.WriteBranch(ctx, branch, func(tx *Tx) error {
		if _, err := tx.EnsureCollection(ctx, k.coll); err != nil {
			return err
		}
		if del {
			return tx.Delete(ctx, k.coll, idValue(k.id))
		}
		return tx.Replace(ctx, k.coll, docKV(k.id, "a", int(v[0]), "b", int(v[1])))
	})
	if err != nil {
		r.fatalf("write %v on %s: %v", k, branch, err)
	}
	if del {
		delete(work, k)
	} else {
		work[k] = v
	}
}

func (r *vcModelRun) commit(branch string) {
	r.t.Helper()
	info, err := r.d.Commit(ctx, branch, CommitOptions{Message: fmt.Sprint("step ", r.step)})
	head := r.m.heads[branch]
	switch {
	case errors.Is(err, ErrNothingToCommit):
		if !reflect.DeepEqual(r.m.work[branch], r.m.commits[head].docs) {
			r.fatalf("nothing to commit on %s, but the model has changes", branch)
		}
	case err != nil:
		r.fatalf("commit on %s: %v", branch, err)
	default:
		r.m.addCommit(info.ID, []string{head}, r.m.work[branch])
		r.m.heads[branch] = info.ID
	}
}

func (r *vcModelRun) branch(name, from string) {
	if _, err := r.d.CreateBranch(ctx, name, Revision{Branch: from}); err != nil {
		r.fatalf("create branch %s: %v", name, err)
	}
	r.m.heads[name] = r.m.heads[from]
	r.m.work[name] = r.m.commits[r.m.heads[from]].docs.clone()
}

// merge merges another branch's head, or now and then an older commit,
// into a branch, committing the branch first.
func (r *vcModelRun) merge(into, from string) {
	r.t.Helper()
	r.commit(into)
	theirs := r.m.heads[from]
	if r.rng.Intn(3) == 0 {
		ids := make([]string, 0, len(r.m.commits))
		for id := range r.m.commits {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		theirs = ids[r.rng.Intn(len(ids))]
	}
	rev, err := r.d.Resolve(ctx, theirs, into)
	if err != nil {
		r.fatalf("resolve %s: %v", theirs, err)
	}
	ours := r.m.heads[into]
	bases := r.m.mergeBases([]string{ours}, []string{theirs})
	res, err := r.d.Merge(ctx, into, rev, MergeOptions{})
	switch {
	case len(bases) == 1 && bases[0] == theirs:
		if err != nil || !res.UpToDate {
			r.fatalf("merge %s into %s: %+v %v, want up to date", theirs, into, res, err)
		}
		return
	case len(bases) == 1 && bases[0] == ours:
		if err != nil || !res.FastForward {
			r.fatalf("merge %s into %s: %+v %v, want a fast-forward", theirs, into, res, err)
		}
		r.m.heads[into], r.m.work[into] = theirs, r.m.commits[theirs].docs.clone()
		return
	}
	if len(bases) > 1 {
		r.multiBase++
	}
	merged, conflicts := mergeModelDocs(r.m.baseDocs(bases), r.m.commits[ours].docs, r.m.commits[theirs].docs, false)
	if len(conflicts) == 0 {
		if err != nil {
			r.fatalf("merge %s into %s over %v: %v, want clean", theirs, into, bases, err)
		}
		r.m.addCommit(res.Commit.ID, []string{ours, theirs}, merged)
		r.m.heads[into], r.m.work[into] = res.Commit.ID, merged
		return
	}
	if !errors.Is(err, ErrMergeConflicts) {
		r.fatalf("merge %s into %s over %v: %v, want conflicts on %v", theirs, into, bases, err, conflicts)
	}
	r.m.work[into] = merged
	if got := r.conflicts(into); !reflect.DeepEqual(got, conflicts) {
		r.fatalf("merge %s into %s over %v: conflicts on %v, want %v", theirs, into, bases, got, conflicts)
	}
	r.checkBranch(into)
	r.settle(into, theirs, conflicts)
}

func (r *vcModelRun) conflicts(branch string) []modelKey {
	confs, err := r.d.Conflicts(ctx, branch, "")
	if err != nil {
		r.fatalf("conflicts on %s: %v", branch, err)
	}
	var keys []modelKey
	for _, c := range confs {
		keys = append(keys, modelKey{c.Collection, c.ID.Int32()})
	}
	sortModelKeys(keys)
	return keys
}

// settle aborts a stopped merge now and then, or resolves each conflict
// taking one side and commits it.
func (r *vcModelRun) settle(branch, theirs string, conflicts []modelKey) {
	ours := r.m.heads[branch]
	if r.rng.Intn(4) == 0 {
		if err := r.d.MergeAbort(ctx, branch); err != nil {
			r.fatalf("abort on %s: %v", branch, err)
		}
		r.m.work[branch] = r.m.commits[ours].docs.clone()
		return
	}
	work := r.m.work[branch]
	for _, k := range conflicts {
		side, docs := ResolveOurs, r.m.commits[ours].docs
		if r.rng.Intn(2) == 0 {
			side, docs = ResolveTheirs, r.m.commits[theirs].docs
		}
		if err := r.d.ResolveConflict(ctx, branch, k.coll, idValue(k.id), side, nil); err != nil {
			r.fatalf("resolve %v on %s: %v", k, branch, err)
		}
		if v, ok := docs[k]; ok {
			work[k] = v
		} else {
			delete(work, k)
		}
	}
	info, err := r.d.MergeContinue(ctx, branch, CommitOptions{})
	if err != nil {
		r.fatalf("continue on %s: %v", branch, err)
	}
	r.m.addCommit(info.ID, []string{ours, theirs}, work)
	r.m.heads[branch] = info.ID
}

// check compares every branch's head and working documents.
func (r *vcModelRun) check() {
	r.t.Helper()
	bs, err := r.d.Branches(ctx)
	if err != nil {
		r.fatalf("branches: %v", err)
	}
	if len(bs) != len(r.m.heads) {
		r.fatalf("%d branches, model has %d", len(bs), len(r.m.heads))
	}
	for _, b := range bs {
		if b.Head.ID != r.m.heads[b.Name] {
			r.fatalf("%s at %s, model at %s", b.Name, b.Head.ID, r.m.heads[b.Name])
		}
		r.checkBranch(b.Name)
	}
}

func (r *vcModelRun) checkBranch(branch string) {
	r.t.Helper()
	snap, err := r.d.BranchSnapshot(ctx, branch)
	if err != nil {
		r.fatalf("snapshot of %s: %v", branch, err)
	}
	got := modelDocs{}
	for _, coll := range vcModelColls {
		for id, doc := range scanDocs(r.t, snap, coll) {
			got[modelKey{coll, id}] = modelDoc{doc.Lookup("a").Int32(), doc.Lookup("b").Int32()}
		}
	}
	if want := r.m.work[branch]; !reflect.DeepEqual(got, want) {
		r.fatalf("%s holds %v, model %v", branch, got, want)
	}
}
