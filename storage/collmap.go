package storage

import (
	"iter"
	"maps"
)

// collMap is a rootState's collections by name. Every write publishes a
// new state, and copying a map of all the collections for each one made
// an insert into a database of 1,000 collections cost 7.5 times one into
// a database of one (BenchmarkInsertAmongCollections). So a collMap is a
// base map that no one changes, shared by the states published from it,
// and a small map of what changed since (a nil entry: dropped), which
// with folds into a new base once it holds collMapDeltaMax names. It also
// keeps the sum of its collections' editBytes, which each write reads.
//
// A collMap and the collections in it never change once built: a write
// changes copies (Tx.mutable) and publishes them with with.
type collMap struct {
	base      map[string]*collection
	delta     map[string]*collection // nil entries: dropped from base
	n         int
	editBytes int64
}

// collMapDeltaMax bounds what a state's delta holds: each publish copies
// it, and each fold copies the base.
const collMapDeltaMax = 32

// newCollMap is a collMap of m, which the caller gives up.
func newCollMap(m map[string]*collection) collMap {
	cm := collMap{base: m, n: len(m)}
	for _, c := range m {
		cm.editBytes += c.editBytes
	}
	return cm
}

// lookup returns the collection called name, if there is one.
func (m collMap) lookup(name string) (*collection, bool) {
	if c, ok := m.delta[name]; ok {
		return c, c != nil
	}
	c, ok := m.base[name]
	return c, ok
}

// get returns the collection called name, or nil.
func (m collMap) get(name string) *collection {
	c, _ := m.lookup(name)
	return c
}

func (m collMap) len() int { return m.n }

// all yields every collection, in no order.
func (m collMap) all() iter.Seq2[string, *collection] {
	return func(yield func(string, *collection) bool) {
		for name, c := range m.delta {
			if c != nil && !yield(name, c) {
				return
			}
		}
		for name, c := range m.base {
			if _, changed := m.delta[name]; !changed && !yield(name, c) {
				return
			}
		}
	}
}

// with returns m with changes applied: each name set to its collection,
// or dropped where that is nil. m is unchanged.
func (m collMap) with(changes map[string]*collection) collMap {
	if len(changes) == 0 {
		return m
	}
	next := collMap{base: m.base, n: m.n, editBytes: m.editBytes,
		delta: make(map[string]*collection, len(m.delta)+len(changes))}
	maps.Copy(next.delta, m.delta)
	for name, c := range changes {
		if was, ok := m.lookup(name); ok {
			next.n--
			next.editBytes -= was.editBytes
		}
		_, inBase := m.base[name]
		switch {
		case c != nil:
			next.n++
			next.editBytes += c.editBytes
			next.delta[name] = c
		case inBase:
			next.delta[name] = nil
		default:
			delete(next.delta, name)
		}
	}
	if len(next.delta) >= collMapDeltaMax {
		return newCollMap(next.clone())
	}
	return next
}

// clone returns a new map of every collection, for a caller to change.
func (m collMap) clone() map[string]*collection {
	out := make(map[string]*collection, m.n)
	for name, c := range m.all() {
		out[name] = c
	}
	return out
}
