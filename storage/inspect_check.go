package storage

import (
	"context"
	"fmt"
	"sync"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/types"
)

// CheckReport is what a walk of a store's chunk graph found.
type CheckReport struct {
	Chunks   int   // chunks reached and read
	Bytes    int64 // their bytes
	Problems []string
	// MoreProblems counts the problems past the first maxProblems.
	MoreProblems int
}

// maxProblems bounds the problems a check lists one by one.
const maxProblems = 100

func (r *CheckReport) problem(format string, args ...any) {
	if len(r.Problems) == maxProblems {
		r.MoreProblems++
		return
	}
	r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
}

// checkBatch is how many chunks a check asks the store for at once.
const checkBatch = 4096

// checkChunks walks every chunk reachable from the store's root (its
// refs and working sets, hence every commit, root, map, blob and doctree
// they reach), following addresses as Dolt's GC does, and reports each
// chunk that is missing, whose bytes do not hash to its address, or whose
// addresses cannot be read.
func checkChunks(ctx context.Context, cs chunks.ChunkStore) (*CheckReport, error) {
	walk, err := types.WalkAddrsForChunkStore(cs)
	if err != nil {
		return nil, err
	}
	root, err := cs.Root(ctx)
	if err != nil {
		return nil, err
	}
	rep := &CheckReport{}
	seen := hash.HashSet{root: {}}
	frontier := []hash.Hash{root}
	for len(frontier) > 0 {
		n := min(len(frontier), checkBatch)
		next := checkChunkBatch(ctx, cs, walk, frontier[:n], seen, rep)
		frontier = append(frontier[n:], next...)
	}
	return rep, nil
}

// checkChunkBatch reads one batch of chunks and returns the addresses
// they hold that were not seen before.
func checkChunkBatch(ctx context.Context, cs chunks.ChunkStore, walk func(chunks.Chunk, func(hash.Hash, bool) error) error,
	batch []hash.Hash, seen hash.HashSet, rep *CheckReport) []hash.Hash {
	var mu sync.Mutex
	found := hash.HashSet{}
	var next []hash.Hash
	visit := func(_ context.Context, c *chunks.Chunk) {
		mu.Lock()
		defer mu.Unlock()
		found.Insert(c.Hash())
		rep.Chunks++
		rep.Bytes += int64(len(c.Data()))
		if hash.Of(c.Data()) != c.Hash() {
			rep.problem("chunk %s: its bytes hash to %s", c.Hash(), hash.Of(c.Data()))
			return
		}
		err := walk(*c, func(h hash.Hash, _ bool) error {
			if !seen.Has(h) {
				seen.Insert(h)
				next = append(next, h)
			}
			return nil
		})
		if err != nil {
			rep.problem("chunk %s: unreadable: %v", c.Hash(), err)
		}
	}
	if err := cs.GetMany(ctx, hash.NewHashSet(batch...), visit); err != nil {
		// One damaged chunk fails the batch: read them one by one to
		// name it.
		found, next = hash.HashSet{}, nil
		for _, h := range batch {
			c, err := cs.Get(ctx, h)
			switch {
			case err != nil:
				found.Insert(h)
				rep.problem("chunk %s: unreadable: %v", h, err)
			case !c.IsEmpty():
				visit(ctx, &c)
			}
		}
	}
	for _, h := range batch {
		if !found.Has(h) {
			rep.problem("chunk %s: missing", h)
		}
	}
	return next
}
