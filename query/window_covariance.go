package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $covariancePop and $covarianceSamp: window functions (not $group
// accumulators) over an expression giving [x, y]; pairs where either is
// not a number are skipped. Welford's method, as mongod's
// AccumulatorCovariance.

func compileCovariance(op string, arg bsoncore.Value, s *compileScope, _ *Env) (accFactory, error) {
	x, err := compileExpr(arg, s)
	if err != nil {
		return nil, err
	}
	samp := op == "$covarianceSamp"
	return func() accumulator { return &covarianceAcc{x: x, samp: samp} }, nil
}

type covarianceAcc struct {
	x                 Expr
	samp              bool
	n                 float64
	meanX, meanY, cXY float64
}

func (a *covarianceAcc) add(c *evalCtx) (int, error) {
	v, err := a.x.eval(c)
	if err != nil {
		return 0, err
	}
	if v.Type != bsoncore.TypeArray {
		return 0, mongoerr.New(mongoerr.Location5424000, "Input to covariance must be an array, but found %s", value.TypeName(v.Type))
	}
	pair := value.ArrayValues(v.Data)
	if len(pair) != 2 {
		return 0, mongoerr.New(mongoerr.Location5424001, "Input array to covariance must have exactly 2 elements, but found %d", len(pair))
	}
	if !value.IsNumber(pair[0]) || !value.IsNumber(pair[1]) {
		return 0, nil
	}
	x, y := value.ToFloat(pair[0]), value.ToFloat(pair[1])
	a.n++
	dx := x - a.meanX
	a.meanX += dx / a.n
	a.meanY += (y - a.meanY) / a.n
	a.cXY += dx * (y - a.meanY)
	return 0, nil
}

func (a *covarianceAcc) result() (bsoncore.Value, error) {
	switch {
	case a.samp && a.n < 2, a.n == 0:
		return value.Null, nil
	case a.samp:
		return value.Double(a.cXY / (a.n - 1)), nil
	}
	return value.Double(a.cXY / a.n), nil
}
