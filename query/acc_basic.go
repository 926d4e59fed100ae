package query

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Accumulators fold the documents of a $group group or a
// $setWindowFields window. Each compiles once into a factory; every group
// (or window) gets a fresh accumulator from it.

// accumulator consumes documents and yields one value. add returns how
// many bytes it retained, for the stage's memory budget.
type accumulator interface {
	add(c *evalCtx) (int, error)
	result() (bsoncore.Value, error)
}

type accFactory func() accumulator

// accCompiler compiles an accumulator's argument.
type accCompiler func(op string, arg bsoncore.Value, s *compileScope, env *Env) (accFactory, error)

// The accumulators over one value each; the numeric ones and
// $mergeObjects are also expression operators over their arguments
// (foldArgs).
func newSumAcc() valueAcc          { return &sumAcc{} }
func newAvgAcc() valueAcc          { return &sumAcc{avg: true} }
func newMinAcc() valueAcc          { return &extremeAcc{sign: -1} }
func newMaxAcc() valueAcc          { return &extremeAcc{sign: 1} }
func newStdDevPopAcc() valueAcc    { return &stdDevAcc{} }
func newStdDevSampAcc() valueAcc   { return &stdDevAcc{samp: true} }
func newFirstAcc() valueAcc        { return &firstLastAcc{first: true} }
func newLastAcc() valueAcc         { return &firstLastAcc{} }
func newPushAcc() valueAcc         { return &pushAcc{} }
func newAddToSetAcc() valueAcc     { return &pushAcc{set: true} }
func newMergeObjectsAcc() valueAcc { return &mergeObjectsAcc{m: newDocM()} }

// valueAcc folds evaluated values; exprAcc evaluates its expression.
type valueAcc interface {
	addValue(v bsoncore.Value) (int, error)
	result() (bsoncore.Value, error)
}

type exprAcc struct {
	x Expr
	valueAcc
}

func (a *exprAcc) add(c *evalCtx) (int, error) {
	v, err := a.x.eval(c)
	if err != nil {
		return 0, err
	}
	return a.addValue(v)
}

// unaryAcc is an accumulator over one expression; an array of arguments
// is refused, as mongod does in $group.
func unaryAcc(mk func() valueAcc) accCompiler {
	return func(op string, arg bsoncore.Value, s *compileScope, _ *Env) (accFactory, error) {
		if arg.Type == bsoncore.TypeArray {
			if value.ArrayLen(arg.Data) != 1 {
				return nil, mongoerr.New(mongoerr.Location40237, "The %s accumulator is a unary operator", op)
			}
			arg, _ = value.ArrayElem(arg.Data, 0)
		}
		x, err := compileExpr(arg, s)
		if err != nil {
			return nil, err
		}
		return func() accumulator { return &exprAcc{x: x, valueAcc: mk()} }, nil
	}
}

func compileCountAcc(_ string, arg bsoncore.Value, _ *compileScope, _ *Env) (accFactory, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(arg.Data) != 0 {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$count takes no arguments, i.e. $count:{}")
	}
	one := literalExpr{value.Int32(1)}
	return func() accumulator { return &exprAcc{x: one, valueAcc: &sumAcc{}} }, nil
}

// foldArgs is an expression operator folding its arguments, or with
// flatten the elements of a single array argument.
func foldArgs(mk func() valueAcc, flatten bool) func(*evalCtx, []bsoncore.Value) (bsoncore.Value, error) {
	return func(_ *evalCtx, args []bsoncore.Value) (bsoncore.Value, error) {
		if flatten && len(args) == 1 && args[0].Type == bsoncore.TypeArray {
			args = value.ArrayValues(args[0].Data)
		}
		a := mk()
		for _, v := range args {
			if _, err := a.addValue(v); err != nil {
				return bsoncore.Value{}, err
			}
		}
		return a.result()
	}
}

// sumAcc implements $sum and $avg: non-numbers are ignored, integer sums
// widen int32 -> int64 -> double, and any decimal makes a decimal.
type sumAcc struct {
	avg bool
	sum bsoncore.Value
	n   int64
}

func (s *sumAcc) addValue(v bsoncore.Value) (int, error) {
	if !value.IsNumber(v) {
		return 0, nil
	}
	if s.sum.Type == 0 {
		s.sum = value.Int32(0)
	}
	s.sum = widenArith(s.sum, v, false)
	s.n++
	return 0, nil
}

func (s *sumAcc) result() (bsoncore.Value, error) {
	if !s.avg {
		if s.sum.Type == 0 {
			return value.Int32(0), nil
		}
		return s.sum, nil
	}
	if s.n == 0 {
		return value.Null, nil
	}
	avg := value.ToFloat(s.sum) / float64(s.n)
	if s.sum.Type == bsoncore.TypeDecimal128 {
		return decimalFromFloat(avg), nil
	}
	return value.Double(avg), nil
}

// extremeAcc implements $min (sign -1) and $max (sign 1); missing and null
// values are ignored.
type extremeAcc struct {
	sign int
	best bsoncore.Value
}

func (e *extremeAcc) addValue(v bsoncore.Value) (int, error) {
	if nullish(v) {
		return 0, nil
	}
	if e.best.Type == 0 || value.Compare(v, e.best)*e.sign > 0 {
		e.best = v
		return len(v.Data), nil
	}
	return 0, nil
}

func (e *extremeAcc) result() (bsoncore.Value, error) {
	if e.best.Type == 0 {
		return value.Null, nil
	}
	return e.best, nil
}

// firstLastAcc implements $first and $last; a missing value counts as null.
type firstLastAcc struct {
	first bool
	v     bsoncore.Value
}

func (f *firstLastAcc) addValue(v bsoncore.Value) (int, error) {
	if v.Type == 0 {
		v = value.Null
	}
	if f.first && f.v.Type != 0 {
		return 0, nil
	}
	f.v = v
	return len(v.Data), nil
}

func (f *firstLastAcc) result() (bsoncore.Value, error) {
	if f.v.Type == 0 {
		return value.Null, nil
	}
	return f.v, nil
}

// pushAcc implements $push and, with set, $addToSet (first appearance
// order, duplicates by Compare dropped).
type pushAcc struct {
	set  bool
	vals []bsoncore.Value
	seen map[string][]*group
}

func (p *pushAcc) addValue(v bsoncore.Value) (int, error) {
	if v.Type == 0 {
		return 0, nil
	}
	if p.set {
		if p.seen == nil {
			p.seen = map[string][]*group{}
		}
		k := bucketKey(v)
		if findGroup(p.seen[k], v) != nil {
			return 0, nil
		}
		p.seen[k] = append(p.seen[k], &group{id: v})
	}
	p.vals = append(p.vals, v)
	return len(v.Data) + 16, nil
}

func (p *pushAcc) result() (bsoncore.Value, error) { return value.BuildArray(p.vals), nil }

// stdDevAcc implements $stdDevPop and $stdDevSamp with Welford's method.
type stdDevAcc struct {
	samp     bool
	n        float64
	mean, m2 float64
}

func (s *stdDevAcc) addValue(v bsoncore.Value) (int, error) {
	if !value.IsNumber(v) {
		return 0, nil
	}
	x := value.ToFloat(v)
	s.n++
	d := x - s.mean
	s.mean += d / s.n
	s.m2 += d * (x - s.mean)
	return 0, nil
}

func (s *stdDevAcc) result() (bsoncore.Value, error) {
	switch {
	case s.n == 0, s.samp && s.n < 2:
		return value.Null, nil
	case s.samp:
		return value.Double(math.Sqrt(s.m2 / (s.n - 1))), nil
	}
	return value.Double(math.Sqrt(s.m2 / s.n)), nil
}

// mergeObjectsAcc implements $mergeObjects: later fields win.
type mergeObjectsAcc struct{ m *mnode }

func (a *mergeObjectsAcc) addValue(v bsoncore.Value) (int, error) {
	if nullish(v) {
		return 0, nil
	}
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return 0, mongoerr.New(mongoerr.Location40400, "$mergeObjects requires object inputs, but input %s is of type %s", value.Format(v), value.TypeName(v.Type))
	}
	it := value.NewIter(v.Data)
	for {
		k, e, ok := it.Next()
		if !ok {
			return len(v.Data), nil
		}
		a.m.setChild(string(k), leafM(e))
	}
}

func (a *mergeObjectsAcc) result() (bsoncore.Value, error) { return a.m.value(), nil }
