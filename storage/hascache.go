package storage

import (
	"reflect"
	"unsafe"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	lru "github.com/hashicorp/golang-lru/v2"
)

// Each Dolt chunk store keeps a cache of the addresses it knows to be
// stored (NomsBlockStore.hasCache), so that a write need not look up in
// the table indexes the chunks its new chunks refer to. It holds up to
// 100,000 addresses and a ghost list of half as many (12-15 MB by our
// estimate), which only a GC empties, and neither its size nor a purge
// is public. Filled by a checkpoint's writes at a few hundred addresses
// a minute, it was the largest part of the soak's growth that no other
// bound covers: 0.96 MB of live heap in 24 minutes (docs/design/
// resources.md, "Growth over time: Dolt's cache of stored addresses").
// So each checkpoint empties it once it holds hasCacheKeep addresses:
// writes after that look a few more addresses up in the table indexes,
// which are in memory. The bound is low (about 250 KB) so that the soak
// reaches it within minutes: at 16,384 it took the soak's checkpoints
// most of an hour to fill, and the cache grew through all of a 30-minute
// soak.
//
// The cache is reached by its field's name. Dolt is pinned (go.mod); if
// a new pin renames or retypes the field, hasCacheOf finds nothing, the
// caches go back to Dolt's bound, and TestCheckpointsBoundDoltsHasCache
// fails.
const hasCacheKeep = 2 << 10

type doltHasCache = lru.TwoQueueCache[hash.Hash, struct{}]

// hasCacheOf is cs's cache of stored addresses, nil if not found.
func hasCacheOf(cs *nbs.NomsBlockStore) *doltHasCache {
	if cs == nil {
		return nil
	}
	f := reflect.ValueOf(cs).Elem().FieldByName("hasCache")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*doltHasCache]() {
		return nil
	}
	return *(**doltHasCache)(unsafe.Pointer(f.UnsafeAddr()))
}

// trimHasCache empties d's cache of stored addresses once it holds
// hasCacheKeep of them. The cache locks itself, so writers may use it
// meanwhile.
func (d *Database) trimHasCache() {
	if hc := hasCacheOf(d.cs); hc != nil && hc.Len() > hasCacheKeep {
		hc.Purge()
	}
}
