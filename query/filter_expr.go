package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// exprMatch is {$expr: <aggregation expression>}: the document matches
// when the expression is truthy. Runtime errors are kept on the Filter
// (Match cannot return them) and the document does not match.
type exprMatch struct {
	f *Filter
	x Expr
}

func parseExprFilter(f *Filter, _ string, v bsoncore.Value, _ bool) (docExpr, error) {
	x, err := compileExpr(v, f.exprScope())
	if err != nil {
		return nil, err
	}
	f.exprs = true
	return &exprMatch{f: f, x: x}, nil
}

func (e *exprMatch) matchDoc(doc []byte) bool {
	v, err := e.x.eval(newEvalCtx(doc, e.f.env))
	if err != nil {
		if e.f.exprErr == nil {
			e.f.exprErr = err
		}
		return false
	}
	return exprTruthy(v)
}

// exprScope is the compile scope of the filter's $expr: the let variables
// and, in a validator, the mark that refuses $function.
func (f *Filter) exprScope() *compileScope {
	s := f.env.scope()
	if f.validator {
		s = &compileScope{parent: s, validator: true}
	}
	return s
}
