package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Operators whose argument is an object of named arguments
// ({$trim: {input, chars}}, {$dateAdd: {startDate, unit, amount}}, ...)
// share this compiler: each named argument is an expression, evaluated
// before the operator runs.

// namedArgs are evaluated arguments; absent ones are not in the map.
type namedArgs map[string]bsoncore.Value

type namedExpr struct {
	op    string
	names []string
	exprs []Expr
	fn    namedFunc
}

// compileNamed compiles an operator whose named arguments are allowed,
// of which required must be present.
func compileNamed(allowed, required []string, fn namedFunc) specialCompiler {
	return func(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
		if arg.Type != bsoncore.TypeEmbeddedDocument {
			return nil, mongoerr.New(mongoerr.Location40477, "%s only supports an object as an argument, found: %s", name, value.TypeName(arg.Type))
		}
		e := &namedExpr{op: name, fn: fn}
		it := value.NewIter(arg.Data)
		for {
			k, v, ok := it.Next()
			if !ok {
				break
			}
			if !containsString(allowed, string(k)) {
				return nil, mongoerr.New(mongoerr.Location40479, "%s: unrecognized option: %s", name, k)
			}
			x, err := compileExpr(v, s)
			if err != nil {
				return nil, err
			}
			e.names = append(e.names, string(k))
			e.exprs = append(e.exprs, x)
		}
		for _, r := range required {
			if !containsString(e.names, r) {
				return nil, mongoerr.New(mongoerr.Location40478, "%s requires '%s' to be specified", name, r)
			}
		}
		return e, nil
	}
}

// eval accounts as callExpr's does.
func (e *namedExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	m := c.mark()
	a := make(namedArgs, len(e.names))
	read := 0
	for i, x := range e.exprs {
		v, err := x.eval(c)
		if err != nil {
			return v, err
		}
		a[e.names[i]] = v
		read += len(v.Data)
	}
	v, err := e.fn(c, a)
	if err != nil {
		return v, err
	}
	if err := c.keep(e.op, m, v); err != nil {
		return v, err
	}
	return v, c.step(read)
}
