package query

import (
	"container/heap"
	"sort"
)

// TopK collects items and gives back the first Keep of them in the order
// before defines (all of them when Keep is 0), holding no more than Keep
// at any time: mongod's top-k sort, for a sort under a limit. before must
// be a strict total order (ties broken by arrival, for a stable sort).
type TopK[T any] struct {
	Keep   int
	before func(a, b T) bool
	items  []T
}

// NewTopK returns an empty collection ordered by before.
func NewTopK[T any](keep int, before func(a, b T) bool) *TopK[T] {
	return &TopK[T]{Keep: keep, before: before}
}

// Add offers x. It returns the item that left the collection to make room
// (x itself when it sorts after every kept one) and whether one did.
func (t *TopK[T]) Add(x T) (out T, dropped bool) {
	switch {
	case t.Keep <= 0:
		t.items = append(t.items, x)
	case len(t.items) < t.Keep:
		heap.Push((*worstFirst[T])(t), x)
	case t.before(x, t.items[0]):
		out, t.items[0] = t.items[0], x
		heap.Fix((*worstFirst[T])(t), 0)
		return out, true
	default:
		return x, true
	}
	return out, false
}

// Sorted returns the kept items in order; the collection is spent.
func (t *TopK[T]) Sorted() []T {
	sort.Slice(t.items, func(i, j int) bool { return t.before(t.items[i], t.items[j]) })
	return t.items
}

// worstFirst is the heap view of a TopK: its top sorts last.
type worstFirst[T any] TopK[T]

func (h *worstFirst[T]) Len() int           { return len(h.items) }
func (h *worstFirst[T]) Less(i, j int) bool { return h.before(h.items[j], h.items[i]) }
func (h *worstFirst[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *worstFirst[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *worstFirst[T]) Pop() any {
	last := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return last
}
