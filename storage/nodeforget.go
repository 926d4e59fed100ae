package storage

import (
	"context"
	"fmt"
	"slices"

	"github.com/dolthub/dolt/go/gen/fb/serial"
	"github.com/dolthub/dolt/go/store/hash"
)

// Forgetting what a new root replaced. Each checkpoint writes new versions
// of the nodes on its changed paths, and the reads after it cache them
// too; the versions they replace would stay cached until the byte bound
// evicts them, so a workload whose data does not grow would still grow the
// cache, checkpoint after checkpoint, up to its bound (the Soak family's
// 138 MB an hour). So when a branch's durable root changes, the nodes of
// the old tree that the new one does not hold leave the cache. Commits,
// snapshots and other branches may still reach them: they are read from
// disk again if so.

// forgetRoot notes st as the root b's nodes come from, forgetting the nodes
// of the root before it that st does not hold, and those of the store's
// map of refs that Dolt replaced meanwhile. States with edits outside a
// checkpoint keep the trees of the last one. Called with b.writeMu held, or
// before b is shared.
func (b *branch) forgetRoot(ctx context.Context, st *rootState) {
	if !st.checkpointed || st.root.Node() == nil || b.nodes == nil {
		return
	}
	root := st.root.HashOf()
	if !b.cachedRoot.IsEmpty() && b.cachedRoot != root {
		b.nodes.forgetReplaced(ctx, b.cachedRoot, root)
	}
	b.cachedRoot = root
	b.nodes.forgetReplacedRefs(ctx)
}

// forgetReplacedRefs forgets the nodes of the store's previous map of refs
// (Dolt's datasets: branches, working sets) that its current one does not
// hold. Dolt writes that map through this store at every working set
// update, a new root node each time. A map written and replaced between
// two calls (several ref updates in one version-control operation) is
// not seen here and ages out.
func (ns *nodeStore) forgetReplacedRefs(ctx context.Context) {
	refs, err := ns.refsRoot(ctx)
	if err != nil {
		return // what it would drop ages out; the next call catches up
	}
	ns.refsMu.Lock()
	defer ns.refsMu.Unlock()
	if !ns.refs.IsEmpty() && ns.refs != refs {
		ns.forgetReplaced(ctx, ns.refs, refs)
	}
	ns.refs = refs
}

// refsRoot returns the address of the store's map of refs: Dolt's store
// root holds a copy of its root node, whose hash is that node's address.
func (ns *nodeStore) refsRoot(ctx context.Context) (hash.Hash, error) {
	root, err := ns.cs.Root(ctx)
	if err != nil || root.IsEmpty() {
		return hash.Hash{}, err
	}
	c, err := ns.cs.Get(ctx, root)
	if err != nil {
		return hash.Hash{}, err
	}
	if serial.GetFileID(c.Data()) != serial.StoreRootFileID {
		return hash.Hash{}, fmt.Errorf("store root %s is not a %s message", root, serial.StoreRootFileID)
	}
	sr, err := serial.TryGetRootAsStoreRoot(c.Data(), serial.MessagePrefixSz)
	if err != nil {
		return hash.Hash{}, fmt.Errorf("store root %s: %w", root, err)
	}
	return hash.Of(sr.AddressMapBytes()), nil
}

// forgetReplaced drops the cached nodes of the tree at from that the tree
// at to does not hold, nested trees included (a root's maps, a map's
// out-of-line values). It walks both trees a level at a time and goes
// into no subtree both hold, so its cost follows the change, not the
// tree; it walks only cached nodes, and reads nothing from disk.
func (ns *nodeStore) forgetReplaced(ctx context.Context, from, to hash.Hash) {
	if from == to {
		return
	}
	w := replacedWalk{ns: ns, old: map[hash.Hash][]hash.Hash{}, reached: hash.NewHashSet(to)}
	w.run(ctx, from, to)
	for _, addr := range w.replaced() {
		ns.cache.remove(ns.key(addr))
	}
}

// replacedWalk is one forgetReplaced's walk. A subtree both trees hold
// usually appears at the same depth in both, where neither side goes into
// it; when the new side finds it deeper (the old tree was lower by a
// level or more), the old side may have walked into it already, and the
// nodes it found there are kept (shared).
type replacedWalk struct {
	ns      *nodeStore
	old     map[hash.Hash][]hash.Hash // old-side nodes walked, with their children
	reached hash.HashSet              // new-side nodes found
	shared  []hash.Hash               // found by the new side after the old walked into them
}

func (w *replacedWalk) run(ctx context.Context, from, to hash.Hash) {
	oldLevel, newLevel := []hash.Hash{from}, []hash.Hash{to}
	for len(oldLevel) > 0 || len(newLevel) > 0 {
		newLevel = w.stepNew(ctx, newLevel, hash.NewHashSet(oldLevel...))
		oldLevel = w.stepOld(ctx, oldLevel)
	}
}

// stepNew walks one level of the new tree and returns the next, found
// before the old side's step so that the old side skips them.
func (w *replacedWalk) stepNew(ctx context.Context, level []hash.Hash, oldLevel hash.HashSet) []hash.Hash {
	var next []hash.Hash
	for _, addr := range level {
		if _, walked := w.old[addr]; walked {
			w.shared = append(w.shared, addr)
			continue
		}
		if oldLevel.Has(addr) {
			continue // both hold it at this depth
		}
		for _, child := range w.children(ctx, addr) {
			if !w.reached.Has(child) {
				w.reached.Insert(child)
				next = append(next, child)
			}
		}
	}
	return next
}

// stepOld walks one level of the old tree, past the nodes the new holds.
func (w *replacedWalk) stepOld(ctx context.Context, level []hash.Hash) []hash.Hash {
	var next []hash.Hash
	for _, addr := range level {
		if _, walked := w.old[addr]; walked || w.reached.Has(addr) {
			continue
		}
		if _, cached := w.ns.cache.peek(w.ns.key(addr)); !cached {
			continue // nothing to drop; what it leads to ages out
		}
		children := w.children(ctx, addr)
		w.old[addr] = children
		next = append(next, children...)
	}
	return next
}

// children returns the addresses a cached node holds: its child nodes, or
// a leaf's out-of-line values and nested trees. An uncached node has none
// here.
func (w *replacedWalk) children(ctx context.Context, addr hash.Hash) []hash.Hash {
	nd, ok := w.ns.cache.peek(w.ns.key(addr))
	if !ok {
		return nil
	}
	return nodeChildren(ctx, nd)
}

// replaced returns the old-side nodes the new tree does not hold: those
// walked, less those the new side found and what the old side walked under
// the ones it found late.
func (w *replacedWalk) replaced() []hash.Hash {
	keep := hash.NewHashSet()
	for stack := slices.Clone(w.shared); len(stack) > 0; {
		addr := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !keep.Has(addr) {
			keep.Insert(addr)
			stack = append(stack, w.old[addr]...)
		}
	}
	var out []hash.Hash
	for addr := range w.old {
		if !w.reached.Has(addr) && !keep.Has(addr) {
			out = append(out, addr)
		}
	}
	return out
}
