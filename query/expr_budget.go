package query

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// The memory and time an expression may take. A few bytes of query ask
// for any amount of either: {$range: [0, 1e9]}, a $reduce that doubles an
// array at every step, a $map whose body builds a large array for each of
// a large array's elements. So every evaluation (one expression tree over
// one document: newEvalCtx) has an exprBudget, shared by the contexts that
// bind variables below it:
//
//   - memory: the operators that build values count the bytes they build
//     (grow) against a limit, as mongod's expression memory tracking does
//     (ExceededMemoryLimit, "<op> needs too much memory"). What is counted
//     is what the evaluation still holds: an operator's temporaries (a
//     $map body's intermediate values, a $reduce's earlier accumulators)
//     stop counting when it is done with them (keep), its result goes on
//     counting for its caller. The count is of the values' BSON bytes, an
//     approximation of the Go memory behind them (a small multiple at
//     worst: slice headers, append's spare capacity, garbage not yet
//     collected);
//   - time: the same calls count work, as do step in the loops that
//     build nothing and every operator the size of its arguments; every
//     checkWork units the budget looks at the command's context
//     (maxTimeMS, killOp, a client hanging up: package interrupt), which the
//     Env carries while a batch runs (Env.context) or the caller gives
//     (Projection.ApplyContext).

// DefaultExprMemoryLimit is how many bytes the values of one evaluation
// may hold: mongod's default for internalQueryMaxRangeBytes and
// internalQueryMaxMapReduceExpressionBytes, and the stages' default
// (DefaultMemoryLimit).
const DefaultExprMemoryLimit = 100 << 20

const (
	// checkWork is how much work (bytes built, or stepWork per loop
	// iteration) passes between two looks at the context: often enough
	// to stop within milliseconds, rarely enough that the look costs
	// nothing measurable.
	checkWork = 64 << 10
	// stepWork is the work of one iteration of a loop that compares or
	// tests values without building any.
	stepWork = 64
	// bodyWork is the work of one iteration of $map, $filter or $reduce,
	// which evaluates an expression per element: a body may be costly
	// without building anything (comparing large values), so these
	// iterations look at the context sooner.
	bodyWork = 1 << 10
	// rangeElemBytes is what mongod counts for each element of a $range
	// (the approximate size of one Value), so that the same ranges fit.
	rangeElemBytes = 16
)

// exprBudget is the memory held and work done by one evaluation.
type exprBudget struct {
	// ctx stops the evaluation; nil: the env's (the running batch's).
	ctx   context.Context
	env   *Env
	limit int64
	held  int64
	work  int64
}

func newExprBudget(env *Env) *exprBudget {
	return &exprBudget{env: env, limit: env.exprMemoryLimit()}
}

// budgetOf is c's budget, made on first use.
func (c *evalCtx) budgetOf() *exprBudget {
	if c.budget == nil {
		c.budget = newExprBudget(c.env)
	}
	return c.budget
}

// grow counts n more bytes that op builds: past the limit it fails, and
// it counts as n units of work.
func (c *evalCtx) grow(op string, n int) error {
	b := c.budgetOf()
	if b.held += int64(n); b.held > b.limit {
		return tooMuchMemory(op, b.held, b.limit)
	}
	return b.spend(int64(n))
}

// step counts n units of work that build nothing.
func (c *evalCtx) step(n int) error { return c.budgetOf().spend(int64(n)) }

// mark is what the evaluation holds now, for a later keep.
func (c *evalCtx) mark() int64 { return c.budgetOf().held }

// keep says that of what op's evaluation counted since mark, only v is
// still held (by op's caller): the rest was temporaries.
func (c *evalCtx) keep(op string, mark int64, v bsoncore.Value) error {
	b := c.budgetOf()
	if b.held = mark + int64(len(v.Data)); b.held > b.limit {
		return tooMuchMemory(op, b.held, b.limit)
	}
	return nil
}

// release says that what the evaluation counted since mark was all
// temporaries.
func (c *evalCtx) release(mark int64) { c.budgetOf().held = mark }

// spend adds work and, every checkWork units, looks at the context.
func (b *exprBudget) spend(n int64) error {
	if b.work += n; b.work < checkWork {
		return nil
	}
	b.work = 0
	if ctx := b.context(); ctx != nil {
		return interrupt.Err(ctx)
	}
	return nil
}

// context is what stops the evaluation (nil: nothing). The env's is read
// at each look, not once: an evaluation context may outlive a batch (a
// window's documents), and each batch has its own.
func (b *exprBudget) context() context.Context {
	if b.ctx != nil {
		return b.ctx
	}
	return b.env.context()
}

// context is what stops c's evaluation, JavaScript calls included (nil:
// nothing).
func (c *evalCtx) context() context.Context { return c.budgetOf().context() }

// tooMuchMemory is mongod's error for an expression past its memory limit.
func tooMuchMemory(op string, need, limit int64) error {
	return mongoerr.New(mongoerr.ExceededMemoryLimit, "%s needs too much memory (%d bytes) and cannot spill to disk. Memory limit: %d bytes", op, need, limit)
}

// arrayBuilder appends an operator's result array element by element,
// each counted before it is appended, so that an array too large fails
// before it is built rather than after.
type arrayBuilder struct {
	c   *evalCtx
	op  string
	at  int32 // where the array's length goes
	buf []byte
	n   int
}

func newArrayBuilder(c *evalCtx, op string) *arrayBuilder {
	at, buf := bsoncore.AppendArrayStart(nil)
	return &arrayBuilder{c: c, op: op, at: at, buf: buf}
}

// add appends v (missing is appended as null, as arrays hold no missing
// values).
func (b *arrayBuilder) add(v bsoncore.Value) error {
	if v.Type == 0 {
		v = bsoncore.Value{Type: bsoncore.TypeNull}
	}
	var digits [20]byte
	key := strconv.AppendInt(digits[:0], int64(b.n), 10)
	if err := b.c.grow(b.op, 1+len(key)+1+len(v.Data)); err != nil {
		return err
	}
	b.buf = append(append(b.buf, byte(v.Type)), key...)
	b.buf = append(append(b.buf, 0), v.Data...)
	b.n++
	return nil
}

// value ends the array.
func (b *arrayBuilder) value() bsoncore.Value {
	buf, _ := bsoncore.AppendArrayEnd(b.buf, b.at)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: buf}
}

// stringBytes is the BSON size of a string value of n bytes.
func stringBytes(n int) int { return 4 + n + 1 }
