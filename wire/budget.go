package wire

import (
	"errors"
	"sync/atomic"
)

// ErrOverBudget: the bytes of the messages being received and handled at
// once, across the connections sharing a Budget, would pass its limit. The
// connection that asked for more is closed; the others go on.
var ErrOverBudget = errors.New("messages in flight exceed the server's limit")

// Budget bounds the memory of messages in flight: the buffers of messages
// still arriving (which grow as bytes come, never from the peer's claim)
// and of decoded messages until their command is done with them.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// take reserves n bytes, or fails without reserving any.
func (b *Budget) take(n int) error {
	if b == nil {
		return nil
	}
	if b.used.Add(int64(n)) > b.limit {
		b.used.Add(-int64(n))
		return ErrOverBudget
	}
	return nil
}

// Release returns n bytes that ReadBudgeted reserved.
func (b *Budget) Release(n int) {
	if b != nil && n != 0 {
		b.used.Add(-int64(n))
	}
}

// Used is how many bytes are reserved now.
func (b *Budget) Used() int64 { return b.used.Load() }

// freePerMessage is how much of each message is not taken from the budget,
// so that ordinary requests never wait on it and only the large messages
// that make the memory bound matter share it. Connections are bounded in
// number, so these free bytes are bounded too.
const freePerMessage = 64 << 10

// account is one message's share of a budget.
type account struct {
	b    *Budget // nil: nothing is counted
	size int     // bytes the message's buffers have grown to
	held int     // bytes taken from b
}

// grow records n more bytes of buffers, taking from the budget what passes
// the message's free share; on failure nothing is recorded.
func (a *account) grow(n int) error {
	if a == nil || a.b == nil {
		return nil
	}
	need := max(0, a.size+n-freePerMessage) - a.held
	if need > 0 {
		if err := a.b.take(need); err != nil {
			return err
		}
		a.held += need
	}
	a.size += n
	return nil
}
