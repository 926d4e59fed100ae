package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/interrupt"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/message"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/sync/errgroup"
)

// Batches the scan of an index build hands to its key extractors: large
// enough that a hand-off costs little per document, small enough that
// the batches in flight stay a few megabytes.
const (
	buildBatchDocs  = 512
	buildBatchBytes = 1 << 20
)

// buildIndexes indexes every document it yields for each of specs, in one
// scan: workers extract the keys of batches of documents into external
// sorters (index_sort.go), and each index map is then built bottom-up
// from its merged, sorted entries, as the chunker writes a map from
// sorted input, rather than by inserting entry by entry.
func buildIndexes(ctx context.Context, ns tree.NodeStore, coll string, specs []*index.Spec, it *Iterator) ([]*indexState, error) {
	workers := max(1, min(runtime.GOMAXPROCS(0), 4))
	budget := int(IndexBuildMemory()) / (workers * len(specs))
	exs := make([]*keyExtractor, workers)
	for i := range exs {
		exs[i] = newKeyExtractor(specs, budget)
	}
	defer func() {
		for _, x := range exs {
			x.close()
		}
	}()
	if err := scanBatches(ctx, it, exs); err != nil {
		return nil, err
	}
	out := make([]*indexState, len(specs))
	for i, s := range specs {
		sorters := make([]*entrySorter, workers)
		multikey := false
		for w, x := range exs {
			sorters[w] = x.sorters[i]
			multikey = multikey || x.multikey[i]
		}
		m, err := sortedIndexMap(ctx, ns, coll, s, sorters, multikey)
		if err != nil {
			return nil, err
		}
		out[i] = &indexState{spec: s, base: m, edits: newEdits(), multikey: multikey}
	}
	return out, nil
}

// docBatch is documents copied out of a scan, end to end in arena.
type docBatch struct {
	arena []byte
	ends  []int
}

func (b *docBatch) add(doc []byte) {
	b.arena = append(b.arena, doc...)
	b.ends = append(b.ends, len(b.arena))
}

func (b *docBatch) full() bool {
	return len(b.ends) >= buildBatchDocs || len(b.arena) >= buildBatchBytes
}

func (b *docBatch) each(fn func(doc bsoncore.Document) error) error {
	start := 0
	for _, end := range b.ends {
		if err := fn(b.arena[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// scanBatches reads it to the end, handing batches of documents to the
// extractors, each on its own goroutine; the first error stops them all.
func scanBatches(ctx context.Context, it *Iterator, exs []*keyExtractor) error {
	var caught caughtPanic
	defer caught.rethrow()
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan *docBatch, len(exs))
	free := make(chan *docBatch, 2*len(exs)) // room for every batch
	for range cap(free) {
		free <- &docBatch{}
	}
	for _, x := range exs {
		g.Go(caught.guard(func() error {
			for b := range batches {
				if err := b.each(x.add); err != nil {
					return err
				}
				free <- b
			}
			x.finish() // each worker sorts its own last runs
			return nil
		}))
	}
	g.Go(caught.guard(func() error {
		defer close(batches)
		return readBatches(gctx, it, batches, free)
	}))
	return g.Wait()
}

// caughtPanic keeps the first panic of a build's goroutines, which stop
// the build as an error would; rethrow raises it again in the goroutine
// that started them, whose caller recovers it as it recovers any panic of
// a command or a background step, rather than the process ending.
type caughtPanic struct {
	once  sync.Once
	value any
	stack []byte
}

var errBuildPanicked = errors.New("index build: a worker panicked")

func (c *caughtPanic) guard(fn func() error) func() error {
	return func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				c.once.Do(func() { c.value, c.stack = p, debug.Stack() })
				err = errBuildPanicked
			}
		}()
		return fn()
	}
}

func (c *caughtPanic) rethrow() {
	if c.value != nil {
		panic(fmt.Sprintf("%v\n%s", c.value, c.stack))
	}
}

// readBatches fills batches taken from free with the documents of it and
// sends them on batches. It stops when ctx is done.
func readBatches(ctx context.Context, it *Iterator, batches chan<- *docBatch, free <-chan *docBatch) error {
	cur := <-free
	stopped := false
	send := func() {
		select {
		case batches <- cur:
		case <-ctx.Done():
			stopped = true
			return
		}
		select {
		case cur = <-free:
			cur.arena, cur.ends = cur.arena[:0], cur.ends[:0]
		case <-ctx.Done():
			stopped = true
		}
	}
	// keep sees each document in place and copies it into the batch; it
	// accepts none, so the scan runs to its end inside one call.
	_, err := it.NextWhere(ctx, func(doc bsoncore.Document) bool {
		if stopped {
			return false
		}
		if cur.add(doc); cur.full() {
			send()
		}
		return false
	})
	if !errors.Is(err, io.EOF) {
		return err
	}
	if len(cur.ends) > 0 && !stopped {
		send()
	}
	return ctx.Err()
}

// keyExtractor turns documents into the entries of each index being
// built, one sorter per index.
type keyExtractor struct {
	specs    []*index.Spec
	sorters  []*entrySorter
	multikey []bool
	idBuf    []byte
}

func newKeyExtractor(specs []*index.Spec, budget int) *keyExtractor {
	x := &keyExtractor{specs: specs, multikey: make([]bool, len(specs))}
	for range specs {
		x.sorters = append(x.sorters, newEntrySorter(budget))
	}
	return x
}

func (x *keyExtractor) add(doc bsoncore.Document) error {
	x.idBuf = index.EncodeID(x.idBuf[:0], doc.Lookup("_id"))
	id := x.idBuf
	for i, s := range x.specs {
		keys, mk, err := s.Keys(doc)
		if err != nil {
			return err
		}
		x.multikey[i] = x.multikey[i] || mk
		value := id
		if covered := s.Covered(doc, mk); covered != nil {
			value = index.EntryValue(id, covered)
		}
		for _, k := range keys {
			if err := x.sorters[i].add(k, id, value); err != nil {
				return err
			}
		}
	}
	return nil
}

func (x *keyExtractor) finish() {
	for _, s := range x.sorters {
		s.finish()
	}
}

func (x *keyExtractor) close() {
	for _, s := range x.sorters {
		s.close()
	}
}

// sortedIndexMap writes an index map from the sorters' merged entries,
// refusing a unique index over documents that share a key.
func sortedIndexMap(ctx context.Context, ns tree.NodeStore, coll string, spec *index.Spec, sorters []*entrySorter, multikey bool) (prolly.Map, error) {
	ch, err := tree.NewEmptyChunker(ctx, ns, message.NewProllyMapSerializer(valDesc, ns.Pool()))
	if err != nil {
		return prolly.Map{}, err
	}
	kb, vb := val.NewTupleBuilder(keyDesc, ns), val.NewTupleBuilder(valDesc, ns)
	add := func(k, v []byte) error {
		kb.PutByteString(0, k)
		kt, err := kb.Build(ns.Pool())
		if err != nil {
			return err
		}
		vt, err := buildValue(ctx, ns, vb, v)
		if err != nil {
			return err
		}
		return ch.AddPair(ctx, tree.Item(kt), tree.Item(vt))
	}
	if multikey { // the marker sorts before every entry
		if err := add(index.MultikeyMarker, []byte{}); err != nil {
			return prolly.Map{}, err
		}
	}
	var prevFields, prevID []byte
	var pacer interrupt.Pacer
	err = mergeSorted(sorters, func(e sortedEntry) error {
		if err := pacer.Check(ctx); err != nil {
			return err
		}
		if spec.Unique {
			if prevID != nil && bytes.Equal(e.fields(), prevFields) && !bytes.Equal(e.id(), prevID) {
				return &DuplicateKeyError{Collection: coll, Index: spec.Name, KeyPattern: spec.Key,
					KeyValue: decodedKeyValue(spec, e.fields()), ID: append([]byte(nil), e.id()...)}
			}
			prevFields, prevID = append(prevFields[:0], e.fields()...), append(prevID[:0], e.id()...)
		}
		return add(e.key, e.value)
	})
	if err != nil {
		return prolly.Map{}, err
	}
	root, err := ch.Done(ctx)
	if err != nil {
		return prolly.Map{}, err
	}
	return prolly.NewMap(root, ns, keyDesc, valDesc), nil
}

// decodedKeyValue names the key fields when no document is at hand.
func decodedKeyValue(spec *index.Spec, fields []byte) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, f := range spec.Fields {
		b.AppendString(f.Path, fmt.Sprintf("%x", fields))
	}
	return b.Build()
}
