package storage

import (
	"runtime"
	"sync"

	"github.com/dolthub/dolt/go/store/hash"
)

// pins counts the states that live snapshots read, so that GC keeps their
// chunks even when a later checkpoint has made them unreachable from any
// ref: a cursor opened before a GC must still be able to read. It also
// holds the indexes built ahead of their createIndexes (PrepareIndexes),
// which are in the store but in no state until SetIndexes takes them.
type pins struct {
	mu     sync.Mutex
	states map[*rootState]int
	// building is held (read) by an index build ahead from its start
	// until what it built is pinned, and (write) by a GC for its whole
	// run: compact waits for the builds under way, the automatic GC
	// leaves its turn to the next checkpoint.
	building sync.RWMutex
}

func (p *pins) add(st *rootState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.states == nil {
		p.states = map[*rootState]int{}
	}
	p.states[st]++
}

func (p *pins) remove(st *rootState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.states[st]--; p.states[st] <= 0 {
		delete(p.states, st)
	}
}

// any reports whether a live snapshot pins a state.
func (p *pins) any() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.states) > 0
}

// roots are the addresses of every prolly tree a pinned state reads.
func (p *pins) roots() []hash.Hash {
	p.mu.Lock()
	defer p.mu.Unlock()
	states := make([]*rootState, 0, len(p.states))
	for st := range p.states {
		states = append(states, st)
	}
	return treeRoots(states)
}

// treeRoots are the addresses of every prolly tree the states read.
func treeRoots(states []*rootState) []hash.Hash {
	var out []hash.Hash
	for _, st := range states {
		for _, c := range st.colls.all() {
			out = append(out, c.base.HashOf())
			for _, ix := range c.indexes {
				out = append(out, ix.base.HashOf())
			}
			if c.capped != nil {
				out = append(out, c.capped.base.HashOf())
			}
		}
		for _, m := range st.conflicts {
			out = append(out, m.HashOf())
		}
	}
	return out
}

// newSnapshot makes a snapshot of st whose pin lasts as long as the
// snapshot (and the iterators made from it) are reachable.
func (d *Database) newSnapshot(st *rootState) *Snapshot {
	s := &Snapshot{ns: d.ns, st: st, tombstones: &d.tombstones, pins: &d.pins}
	d.pins.add(st)
	runtime.AddCleanup(s, func(st *rootState) { d.pins.remove(st) }, st)
	return s
}
