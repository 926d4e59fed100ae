package query

import (
	"context"

	"dumbodb/mongoerr"
)

// Interruption: the server bounds a command's context by maxTimeMS and
// cancels it when the operation is killed or its client goes away; every
// loop that can run long looks at the context through ContextErr, which
// reports the stop in MongoDB's terms (mongoerr.Interruption).
//
// The rule that keeps this cheap and complete: a stream whose Next may do
// unbounded work (a scan skipping rejected entries, a document expanded
// into many, a join's probe) checks inside that work; a loop that only
// pulls from a stream relies on the stream's checks. Cheap iterations are
// counted with InterruptCheck; an iteration that costs a sub-pipeline or a
// scan (one $lookup input document, one $graphLookup round) calls
// ContextErr itself, since amortising those would restart the count on
// every nested run and never reach a check. Expressions count the work
// they do rather than iterations, their loops being nested at will
// (exprBudget, expr_budget.go).

// checkEvery is how many iterations pass between two looks at the
// context: ctx.Err is an atomic load behind a chain of interface calls,
// cheap but not free for loops doing little per iteration.
const checkEvery = 256

// InterruptCheck paces a loop's interruption checks. The zero value is
// ready to use.
type InterruptCheck struct{ n uint32 }

// Check is ContextErr on every checkEvery-th call, nil on the others.
func (c *InterruptCheck) Check(ctx context.Context) error {
	if c.n++; c.n%checkEvery != 0 {
		return nil
	}
	return ContextErr(ctx)
}

// ContextErr is why ctx is done as MongoDB's error (MaxTimeMSExpired or
// Interrupted), nil while it is not.
func ContextErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return mongoerr.Interruption(err)
	}
	return nil
}
