// Package interrupt owns how long-running loops notice that their command
// must stop: the server bounds a command's context by maxTimeMS and
// cancels it when the operation is killed or its client goes away; every
// loop that can run long looks at the context through Err, which reports
// the stop in MongoDB's terms (mongoerr.Interruption).
//
// The rule that keeps this cheap and complete: a stream whose Next may do
// unbounded work (a scan skipping rejected entries, a document expanded
// into many, a join's probe) checks inside that work; a loop that only
// pulls from a stream relies on the stream's checks. Cheap iterations are
// counted with a Pacer; an iteration that costs a sub-pipeline or a scan
// (one $lookup input document, one $graphLookup round) calls Err itself,
// since amortising those would restart the count on every nested run and
// never reach a check. Expressions count the work they do rather than
// iterations, their loops being nested at will (query's expression
// budget).
//
// It is a leaf so that storage, index builds and the query language share
// it without importing one another.
package interrupt

import (
	"context"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// checkEvery is how many iterations pass between two looks at the
// context: ctx.Err is an atomic load behind a chain of interface calls,
// cheap but not free for loops doing little per iteration.
const checkEvery = 256

// Pacer paces a loop's interruption checks. The zero value is ready to
// use.
type Pacer struct{ n uint32 }

// Check is Err on every checkEvery-th call, nil on the others.
func (p *Pacer) Check(ctx context.Context) error {
	if p.n++; p.n%checkEvery != 0 {
		return nil
	}
	return Err(ctx)
}

// Err is why ctx is done as MongoDB's error (MaxTimeMSExpired or
// Interrupted), nil while it is not.
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return mongoerr.Interruption(err)
	}
	return nil
}
