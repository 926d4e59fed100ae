package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Comparison, boolean, conditional and variable-binding expressions.

// compareOp is $eq, $ne, $gt, $gte, $lt or $lte: test says which
// orders of the two arguments make it true.
func compareOp(name string, test func(c int) bool) exprEntry {
	return fixed(name, 2, 2, func(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
		return value.Bool(test(exprCompare(c, a[0], a[1]))), nil
	})
}

func evalCmp(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	return value.Int32(int32(exprCompare(c, a[0], a[1]))), nil
}

func evalNot(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	return value.Bool(!exprTruthy(a[0])), nil
}

func evalType(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	return value.String(exprTypeName(a[0])), nil
}

func compileLiteral(_ string, arg bsoncore.Value, _ *compileScope) (Expr, error) {
	return literalExpr{arg}, nil
}

// exprCompare orders values for expressions: missing sorts with undefined,
// below null, and strings follow the command's collation.
func exprCompare(c *evalCtx, a, b bsoncore.Value) int {
	if a.Type == 0 {
		a = bsoncore.Value{Type: bsoncore.TypeUndefined}
	}
	if b.Type == 0 {
		b = bsoncore.Value{Type: bsoncore.TypeUndefined}
	}
	return value.CompareWith(a, b, c.env.coll())
}

// andOrExpr short-circuits, so later arguments are not evaluated (and
// cannot fail) once the result is known.
type andOrExpr struct {
	or   bool
	args []Expr
}

func compileAndOr(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	args := []bsoncore.Value{arg}
	if arg.Type == bsoncore.TypeArray {
		args = value.ArrayValues(arg.Data)
	}
	e := &andOrExpr{or: name == "$or"}
	for _, a := range args {
		x, err := compileExpr(a, s)
		if err != nil {
			return nil, err
		}
		e.args = append(e.args, x)
	}
	return e, nil
}

func (e *andOrExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	for _, a := range e.args {
		v, err := a.eval(c)
		if err != nil {
			return bsoncore.Value{}, err
		}
		if exprTruthy(v) == e.or {
			return value.Bool(e.or), nil
		}
	}
	return value.Bool(!e.or), nil
}

// condExpr is $cond in its array or {if, then, else} form.
type condExpr struct{ cond, then, els Expr }

func compileCond(_ string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	var parts [3]bsoncore.Value
	switch arg.Type {
	case bsoncore.TypeArray:
		vals := value.ArrayValues(arg.Data)
		if len(vals) != 3 {
			return nil, mongoerr.New(mongoerr.Location16020, "Expression $cond takes exactly 3 arguments. %d were passed in.", len(vals))
		}
		copy(parts[:], vals)
	case bsoncore.TypeEmbeddedDocument:
		it := value.NewIter(arg.Data)
		for {
			k, v, ok := it.Next()
			if !ok {
				break
			}
			switch string(k) {
			case "if":
				parts[0] = v
			case "then":
				parts[1] = v
			case "else":
				parts[2] = v
			default:
				return nil, mongoerr.New(mongoerr.Location17083, "Unrecognized parameter to $cond: %s", k)
			}
		}
		missing := [3]mongoerr.Code{mongoerr.Location17080, mongoerr.Location17081, mongoerr.Location17082}
		for i, name := range []string{"if", "then", "else"} {
			if parts[i].Type == 0 {
				return nil, mongoerr.New(missing[i], "Missing '%s' parameter to $cond", name)
			}
		}
	default:
		return nil, mongoerr.New(mongoerr.Location16020, "Expression $cond takes exactly 3 arguments. 1 were passed in.")
	}
	xs, err := compileAll(parts[:], s)
	if err != nil {
		return nil, err
	}
	return &condExpr{xs[0], xs[1], xs[2]}, nil
}

func compileAll(vals []bsoncore.Value, s *compileScope) ([]Expr, error) {
	out := make([]Expr, len(vals))
	for i, v := range vals {
		x, err := compileExpr(v, s)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

func (e *condExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	v, err := e.cond.eval(c)
	if err != nil {
		return v, err
	}
	if exprTruthy(v) {
		return e.then.eval(c)
	}
	return e.els.eval(c)
}

// switchExpr is {$switch: {branches: [{case, then}], default}}.
type switchExpr struct {
	cases, thens []Expr
	def          Expr
}

func compileSwitch(_ string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40060, "$switch requires an object as an argument, found: %s", value.TypeName(arg.Type))
	}
	e := &switchExpr{}
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "branches":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.Location40061, "$switch expected an array for 'branches', found: %s", value.TypeName(v.Type))
			}
			for _, b := range value.ArrayValues(v.Data) {
				if err := e.addBranch(b, s); err != nil {
					return nil, err
				}
			}
		case "default":
			x, err := compileExpr(v, s)
			if err != nil {
				return nil, err
			}
			e.def = x
		default:
			return nil, mongoerr.New(mongoerr.Location40067, "$switch found an unknown argument: %s", k)
		}
	}
	if len(e.cases) == 0 {
		return nil, mongoerr.New(mongoerr.Location40068, "$switch requires at least one branch.")
	}
	return e, nil
}

func (e *switchExpr) addBranch(b bsoncore.Value, s *compileScope) error {
	if b.Type != bsoncore.TypeEmbeddedDocument {
		return mongoerr.New(mongoerr.Location40062, "$switch expected each branch to be an object, found: %s", value.TypeName(b.Type))
	}
	cs, hasCase := value.LookupField(b.Data, "case")
	th, hasThen := value.LookupField(b.Data, "then")
	switch {
	case value.ArrayLen(b.Data) > 2 || (value.ArrayLen(b.Data) == 2 && (!hasCase || !hasThen)):
		return mongoerr.New(mongoerr.Location40063, "$switch found an unknown argument to a branch: %s", value.Format(b))
	case !hasCase:
		return mongoerr.New(mongoerr.Location40064, "$switch requires each branch have a 'case' expression")
	case !hasThen:
		return mongoerr.New(mongoerr.Location40065, "$switch requires each branch have a 'then' expression.")
	}
	xs, err := compileAll([]bsoncore.Value{cs, th}, s)
	if err != nil {
		return err
	}
	e.cases, e.thens = append(e.cases, xs[0]), append(e.thens, xs[1])
	return nil
}

func (e *switchExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	for i, cs := range e.cases {
		v, err := cs.eval(c)
		if err != nil {
			return v, err
		}
		if exprTruthy(v) {
			return e.thens[i].eval(c)
		}
	}
	if e.def == nil {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40066, "$switch could not find a matching branch for an input, and no default was specified.")
	}
	return e.def.eval(c)
}

// letExpr binds variables for its "in" expression.
type letExpr struct {
	names []string
	vals  []Expr
	in    Expr
}

func compileLet(_ string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location16874, "$let only supports an object as its argument")
	}
	vars, hasVars := value.LookupField(arg.Data, "vars")
	in, hasIn := value.LookupField(arg.Data, "in")
	switch {
	case !hasVars:
		return nil, mongoerr.New(mongoerr.Location16876, "Missing 'vars' parameter to $let")
	case !hasIn:
		return nil, mongoerr.New(mongoerr.Location16877, "Missing 'in' parameter to $let")
	case vars.Type != bsoncore.TypeEmbeddedDocument:
		return nil, mongoerr.New(mongoerr.TypeMismatch, "invalid parameter: expected an object (vars)")
	}
	e := &letExpr{}
	inner := s
	it := value.NewIter(vars.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		if err := validateVarName(string(k)); err != nil {
			return nil, err
		}
		x, err := compileExpr(v, s)
		if err != nil {
			return nil, err
		}
		e.names, e.vals = append(e.names, string(k)), append(e.vals, x)
		inner = inner.with(string(k))
	}
	x, err := compileExpr(in, inner)
	if err != nil {
		return nil, err
	}
	e.in = x
	return e, nil
}

// eval holds the variables' values while 'in' runs, then only its result
// (keep).
func (e *letExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	m := c.mark()
	inner := c
	for i, x := range e.vals {
		v, err := x.eval(c)
		if err != nil {
			return v, err
		}
		inner = inner.bind(e.names[i], v)
	}
	v, err := e.in.eval(inner)
	if err != nil {
		return v, err
	}
	return v, c.keep("$let", m, v)
}

func evalIfNull(_ *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	for _, v := range a[:len(a)-1] {
		if !nullish(v) {
			return v, nil
		}
	}
	return a[len(a)-1], nil
}

func evalIn(c *evalCtx, a []bsoncore.Value) (bsoncore.Value, error) {
	if a[1].Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location40081, "$in requires an array as a second argument, found: %s", exprTypeName(a[1]))
	}
	it := value.NewIter(a[1].Data)
	for _, e, ok := it.Next(); ok; _, e, ok = it.Next() {
		if err := c.step(stepWork); err != nil {
			return bsoncore.Value{}, err
		}
		if exprCompare(c, a[0], e) == 0 {
			return value.Bool(true), nil
		}
	}
	return value.Bool(false), nil
}
