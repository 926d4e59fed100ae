package query

import (
	"math"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Accumulators that keep several values: $firstN $lastN $maxN $minN,
// $top $bottom $topN $bottomN (ordered by their own sortBy), $median and
// $percentile.

// accArgs parses an accumulator's object argument into compiled fields;
// required lists the fields that must be present.
func accArgs(op string, arg bsoncore.Value, s *compileScope, allowed []string, required []string) (map[string]Expr, map[string]bsoncore.Value, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, nil, mongoerr.New(mongoerr.Location5787801, "specification must be an object; found %s: %s", op, value.Format(arg))
	}
	exprs, raw := map[string]Expr{}, map[string]bsoncore.Value{}
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		key := string(k)
		if !containsString(allowed, key) {
			return nil, nil, mongoerr.New(mongoerr.Location5787901, "Unknown argument for '%s' operator: %s", op, key)
		}
		raw[key] = v
		if key == "sortBy" || key == "method" {
			continue
		}
		x, err := compileExpr(v, s)
		if err != nil {
			return nil, nil, err
		}
		exprs[key] = x
	}
	for _, r := range required {
		if _, ok := raw[r]; !ok {
			return nil, nil, mongoerr.New(mongoerr.Location5787906, "Missing value for '%s'", r)
		}
	}
	return exprs, raw, nil
}

// evalN evaluates and checks an accumulator's n: a positive integer.
func evalN(op string, x Expr, c *evalCtx) (int, error) {
	v, err := x.eval(c)
	if err != nil {
		return 0, err
	}
	if !value.IsNumber(v) || value.ToFloat(v) != math.Trunc(value.ToFloat(v)) {
		return 0, mongoerr.New(mongoerr.Location5787902, "Value for 'n' must be of integral type, but found %s", value.Format(v))
	}
	f := value.ToFloat(v)
	if f <= 0 {
		return 0, mongoerr.New(mongoerr.Location5787908, "'n' must be greater than 0, found %s", value.Format(v))
	}
	return int(min(f, 1<<31)), nil
}

// nAcc implements $firstN, $lastN, $maxN and $minN.
type nAcc struct {
	op    string
	input Expr
	nx    Expr
	n     int
	vals  []bsoncore.Value
}

func compileNAcc(op string, arg bsoncore.Value, s *compileScope, _ *Env) (accFactory, error) {
	exprs, _, err := accArgs(op, arg, s, []string{"input", "n"}, []string{"input", "n"})
	if err != nil {
		return nil, err
	}
	return func() accumulator { return &nAcc{op: op, input: exprs["input"], nx: exprs["n"]} }, nil
}

func (a *nAcc) add(c *evalCtx) (int, error) {
	if a.n == 0 {
		n, err := evalN(a.op, a.nx, c)
		if err != nil {
			return 0, err
		}
		a.n = n
	}
	v, err := a.input.eval(c)
	if err != nil {
		return 0, err
	}
	return a.addValue(v), nil
}

func (a *nAcc) addValue(v bsoncore.Value) int {
	switch a.op {
	case "$firstN":
		if len(a.vals) >= a.n {
			return 0
		}
		if v.Type == 0 {
			v = value.Null
		}
	case "$lastN":
		if v.Type == 0 {
			v = value.Null
		}
		if len(a.vals) >= a.n {
			a.vals = a.vals[1:]
		}
	default:
		if nullish(v) {
			return 0
		}
		sign := 1
		if a.op == "$minN" {
			sign = -1
		}
		i := sort.Search(len(a.vals), func(i int) bool { return value.Compare(a.vals[i], v)*sign < 0 })
		a.vals = append(a.vals, bsoncore.Value{})
		copy(a.vals[i+1:], a.vals[i:])
		a.vals[i] = v
		if len(a.vals) > a.n {
			a.vals = a.vals[:a.n]
		}
	}
	if a.op == "$firstN" || a.op == "$lastN" {
		a.vals = append(a.vals, v)
	}
	return len(v.Data) + 16
}

func (a *nAcc) result() (bsoncore.Value, error) { return value.BuildArray(a.vals), nil }

// nExpr is the expression form: {$firstN: {input: <array>, n}}.
type nExpr struct {
	op        string
	input, nx Expr
}

func compileNExpr(op string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	exprs, _, err := accArgs(op, arg, s, []string{"input", "n"}, []string{"input", "n"})
	if err != nil {
		return nil, err
	}
	return &nExpr{op: op, input: exprs["input"], nx: exprs["n"]}, nil
}

func (e *nExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	n, err := evalN(e.op, e.nx, c)
	if err != nil {
		return bsoncore.Value{}, err
	}
	in, err := e.input.eval(c)
	if err != nil {
		return in, err
	}
	if in.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location5788200, "Input must be an array, found %s", exprTypeName(in))
	}
	a := &nAcc{op: e.op, n: n}
	for _, v := range value.ArrayValues(in.Data) {
		a.addValue(v)
	}
	return a.result()
}

// topAcc implements $top, $bottom, $topN and $bottomN: it keeps the
// documents first (top) or last (bottom) in sortBy order with their output.
type topAcc struct {
	op      string
	nx      Expr
	n       int
	output  Expr
	sort    *Sort
	entries []topEntry
}

type topEntry struct {
	doc bsoncore.Document
	out bsoncore.Value
}

func compileTopAcc(op string, arg bsoncore.Value, s *compileScope, env *Env) (accFactory, error) {
	allowed, required := []string{"sortBy", "output", "n"}, []string{"sortBy", "output", "n"}
	if op == "$top" || op == "$bottom" {
		allowed, required = allowed[:2], required[:2]
	}
	exprs, raw, err := accArgs(op, arg, s, allowed, required)
	if err != nil {
		return nil, err
	}
	if raw["sortBy"].Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location5788604, "'sortBy' must be specified as an object")
	}
	srt, err := CompileSortEnv(raw["sortBy"].Data, env)
	if err != nil {
		return nil, err
	}
	return func() accumulator {
		return &topAcc{op: op, nx: exprs["n"], output: exprs["output"], sort: srt}
	}, nil
}

func (a *topAcc) single() bool { return a.op == "$top" || a.op == "$bottom" }

func (a *topAcc) add(c *evalCtx) (int, error) {
	if a.n == 0 {
		a.n = 1
		if !a.single() {
			n, err := evalN(a.op, a.nx, c)
			if err != nil {
				return 0, err
			}
			a.n = n
		}
	}
	out, err := a.output.eval(c)
	if err != nil {
		return 0, err
	}
	if out.Type == 0 {
		out = value.Null
	}
	doc := bsoncore.Document(c.cur.Data)
	bottom := a.op == "$bottom" || a.op == "$bottomN"
	// Insert after equal keys, so ties keep input order.
	i := sort.Search(len(a.entries), func(i int) bool { return a.sort.Compare(a.entries[i].doc, doc) > 0 })
	a.entries = append(a.entries, topEntry{})
	copy(a.entries[i+1:], a.entries[i:])
	a.entries[i] = topEntry{doc: doc, out: out}
	if len(a.entries) > a.n {
		if bottom {
			a.entries = a.entries[1:]
		} else {
			a.entries = a.entries[:a.n]
		}
	}
	return len(doc) + len(out.Data), nil
}

func (a *topAcc) result() (bsoncore.Value, error) {
	if a.single() {
		if len(a.entries) == 0 {
			return value.Null, nil
		}
		return a.entries[0].out, nil
	}
	vals := make([]bsoncore.Value, len(a.entries))
	for i, e := range a.entries {
		vals[i] = e.out
	}
	return value.BuildArray(vals), nil
}

// percentileAcc implements $median and $percentile over numeric inputs.
type percentileAcc struct {
	op     string
	input  Expr
	ps     []float64
	method string
	vals   []float64
}

// percentileArgs parses {input, p, method} ($median has no p).
func percentileArgs(op string, arg bsoncore.Value, s *compileScope) (Expr, []float64, string, error) {
	allowed := []string{"input", "method", "p"}
	required := allowed
	if op == "$median" {
		allowed, required = allowed[:2], allowed[:2]
	}
	exprs, raw, err := accArgs(op, arg, s, allowed, required)
	if err != nil {
		return nil, nil, "", err
	}
	method, _ := raw["method"].StringValueOK()
	if method != "approximate" && method != "discrete" && method != "continuous" {
		return nil, nil, "", mongoerr.New(mongoerr.BadValue, "Currently only 'approximate' can be used as percentile 'method'")
	}
	ps := []float64{0.5}
	if op == "$percentile" {
		p, err := exprs["p"].eval(&evalCtx{})
		if err != nil {
			return nil, nil, "", err
		}
		if p.Type != bsoncore.TypeArray || value.ArrayLen(p.Data) == 0 {
			return nil, nil, "", mongoerr.New(mongoerr.Location7750301, "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: %s", value.Format(p))
		}
		ps = nil
		for _, v := range value.ArrayValues(p.Data) {
			if !value.IsNumber(v) || value.ToFloat(v) < 0 || value.ToFloat(v) > 1 {
				return nil, nil, "", mongoerr.New(mongoerr.Location7750302, "The $percentile 'p' field must be an array of numbers from [0.0, 1.0], but found: %s", value.Format(v))
			}
			ps = append(ps, value.ToFloat(v))
		}
	}
	return exprs["input"], ps, method, nil
}

func compilePercentileAcc(op string, arg bsoncore.Value, s *compileScope, _ *Env) (accFactory, error) {
	input, ps, method, err := percentileArgs(op, arg, s)
	if err != nil {
		return nil, err
	}
	return func() accumulator { return &percentileAcc{op: op, input: input, ps: ps, method: method} }, nil
}

func (a *percentileAcc) add(c *evalCtx) (int, error) {
	v, err := a.input.eval(c)
	if err != nil {
		return 0, err
	}
	a.addValue(v)
	return 8, nil
}

func (a *percentileAcc) addValue(v bsoncore.Value) {
	if value.IsNumber(v) {
		a.vals = append(a.vals, value.ToFloat(v))
	}
}

// result picks, for "approximate" and "discrete", the smallest value with
// at least p of the inputs at or below it; "continuous" interpolates.
func (a *percentileAcc) result() (bsoncore.Value, error) {
	if len(a.vals) == 0 {
		if a.op == "$median" {
			return value.Null, nil
		}
		out := make([]bsoncore.Value, len(a.ps))
		for i := range out {
			out[i] = value.Null
		}
		return value.BuildArray(out), nil
	}
	sort.Float64s(a.vals)
	n := float64(len(a.vals))
	var out []bsoncore.Value
	for _, p := range a.ps {
		var r float64
		if a.method == "continuous" {
			pos := p * (n - 1)
			lo := math.Floor(pos)
			r = a.vals[int(lo)]
			if hi := math.Ceil(pos); hi != lo {
				r += (pos - lo) * (a.vals[int(hi)] - r)
			}
		} else {
			r = a.vals[int(max(0, math.Ceil(p*n)-1))]
		}
		out = append(out, value.Double(r))
	}
	if a.op == "$median" {
		return out[0], nil
	}
	return value.BuildArray(out), nil
}

// percentileExpr is the expression form over an array or a number.
type percentileExpr struct{ acc percentileAcc }

func compilePercentileExpr(op string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	input, ps, method, err := percentileArgs(op, arg, s)
	if err != nil {
		return nil, err
	}
	return &percentileExpr{percentileAcc{op: op, input: input, ps: ps, method: method}}, nil
}

func (e *percentileExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	v, err := e.acc.input.eval(c)
	if err != nil {
		return v, err
	}
	a := e.acc
	a.vals = nil
	if v.Type == bsoncore.TypeArray {
		for _, x := range value.ArrayValues(v.Data) {
			a.addValue(x)
		}
	} else {
		a.addValue(v)
	}
	return a.result()
}
