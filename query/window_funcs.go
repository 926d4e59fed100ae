package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Window functions that depend on document order rather than folding a
// window: $rank $denseRank $documentNumber $shift $derivative $integral
// $expMovingAvg $locf $linearFill.

func compileWindowFunc(field string, v bsoncore.Value, srt *Sort, pc *pipeCtx) (windowFunc, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The field '%s' must be an object", field)
	}
	var name string
	var arg, window bsoncore.Value
	it := value.NewIter(v.Data)
	for {
		k, e, ok := it.Next()
		if !ok {
			break
		}
		switch {
		case string(k) == "window":
			window = e
		case name != "":
			return nil, mongoerr.New(mongoerr.FailedToParse, "Expected only one window function in '%s', found %s and %s", field, name, k)
		default:
			name, arg = string(k), e
		}
	}
	if name == "" {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Expected a window function in '%s'", field)
	}
	fn, known := lookupWindowFunc(name)
	w := &windowSpec{name: name, arg: arg, bounds: wholePartition, hasWindow: window.Type != 0, sort: srt, scope: pc.env.scope(), env: pc.env}
	if w.hasWindow {
		if !fn.window {
			return nil, mongoerr.New(mongoerr.FailedToParse, "'window' field is not allowed in '%s'", name)
		}
		var err error
		if w.bounds, err = parseWindow(window, srt); err != nil {
			return nil, err
		}
	}
	if !known {
		return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized window function, %s", name)
	}
	return fn.compile(w)
}

// windowSpec is one output field's window function as compileWindowFunc
// read it, for the function's compiler.
type windowSpec struct {
	name      string
	arg       bsoncore.Value
	bounds    windowBounds // wholePartition unless a window is given
	hasWindow bool
	sort      *Sort // the stage's sortBy; nil: none
	scope     *compileScope
	env       *Env
}

// foldWindow makes an accumulator a window function folding each
// document's window.
func foldWindow(compile accCompiler) windowCompiler {
	return func(w *windowSpec) (windowFunc, error) {
		mk, err := compile(w.name, w.arg, w.scope, w.env)
		if err != nil {
			return nil, err
		}
		return &accWindow{mk: mk, bounds: w.bounds}, nil
	}
}

// compileRank compiles $rank, $denseRank or $documentNumber.
func compileRank(w *windowSpec) (windowFunc, error) {
	name, arg, srt := w.name, w.arg, w.sort
	if arg.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(arg.Data) != 0 {
		return nil, mongoerr.New(mongoerr.Location5371603, "%s takes no arguments, i.e. %s:{}", name, name)
	}
	if srt == nil || len(srt.keys) != 1 && name != "$documentNumber" {
		return nil, mongoerr.New(mongoerr.Location5371602, "%s must be specified with a top level sortBy expression with exactly one element", name)
	}
	return rankFunc(name), nil
}

// compileFill compiles $locf or $linearFill.
func compileFill(w *windowSpec) (windowFunc, error) {
	x, err := compileExpr(w.arg, w.scope)
	if err != nil {
		return nil, err
	}
	if w.name == "$linearFill" && (w.sort == nil || len(w.sort.keys) != 1) {
		return nil, mongoerr.New(mongoerr.Location605001, "$linearFill requires a sortBy with exactly one field")
	}
	return &fillFunc{linear: w.name == "$linearFill", x: x}, nil
}

// rankFunc is $rank (ties share a rank, gaps follow), $denseRank (no
// gaps) or $documentNumber (position).
type rankFunc string

func (r rankFunc) compute(_ context.Context, p *partition) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	rank, dense := 0, 0
	for i := range p.docs {
		tie := i > 0 && p.sort.Compare(p.docs[i-1], p.docs[i]) == 0
		if !tie {
			rank, dense = i+1, dense+1
		}
		switch r {
		case "$rank":
			out[i] = smallestInt(int64(rank))
		case "$denseRank":
			out[i] = smallestInt(int64(dense))
		default:
			out[i] = smallestInt(int64(i + 1))
		}
	}
	return out, nil
}

// shiftFunc is $shift: the output expression evaluated "by" documents
// away, or the default.
type shiftFunc struct {
	output Expr
	by     int
	def    bsoncore.Value
}

func compileShift(w *windowSpec) (windowFunc, error) {
	arg, srt, s := w.arg, w.sort, w.scope
	if srt == nil {
		return nil, mongoerr.New(mongoerr.Location5433600, "$shift requires a sortBy")
	}
	exprs, raw, err := accArgs("$shift", arg, s, []string{"output", "by", "default"}, []string{"output", "by"})
	if err != nil {
		return nil, err
	}
	by := raw["by"]
	if !value.IsNumber(by) || value.ToFloat(by) != float64(int32(value.ToFloat(by))) {
		return nil, mongoerr.New(mongoerr.FailedToParse, "'$shift:by' field must be an integer, but found %s", value.Format(by))
	}
	f := &shiftFunc{output: exprs["output"], by: int(value.ToFloat(by)), def: value.Null}
	if d, ok := raw["default"]; ok {
		x, _ := compileExpr(d, nil)
		lit, isLit := x.(literalExpr)
		if !isLit {
			return nil, mongoerr.New(mongoerr.FailedToParse, "'$shift:default' expression must yield a constant value.")
		}
		f.def = lit.v
	}
	return f, nil
}

func (f *shiftFunc) compute(_ context.Context, p *partition) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	for i := range p.docs {
		j := i + f.by
		if j < 0 || j >= len(p.docs) {
			out[i] = f.def
			continue
		}
		v, err := f.output.eval(p.ctxs[j])
		if err != nil {
			return nil, err
		}
		if v.Type == 0 {
			v = value.Null
		}
		out[i] = v
	}
	return out, nil
}

// rateFunc is $derivative (change over the window per sortBy unit) or
// $integral (trapezoidal area under input over sortBy).
type rateFunc struct {
	integral bool
	input    Expr
	unitMs   int64 // 0: sortBy is numeric
	bounds   windowBounds
}

// compileRateFunc compiles $derivative or $integral.
func compileRateFunc(w *windowSpec) (windowFunc, error) {
	name, arg, bounds, hasWindow, srt, s := w.name, w.arg, w.bounds, w.hasWindow, w.sort, w.scope
	if srt == nil || len(srt.keys) != 1 {
		return nil, mongoerr.New(mongoerr.Location5423301, "%s requires a sortBy with exactly one field", name)
	}
	if name == "$derivative" && !hasWindow {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$derivative requires explicit window bounds")
	}
	exprs, raw, err := accArgs(name, arg, s, []string{"input", "unit"}, []string{"input"})
	if err != nil {
		return nil, err
	}
	f := &rateFunc{integral: name == "$integral", input: exprs["input"], bounds: bounds}
	if u, ok := raw["unit"]; ok {
		if u.Type != bsoncore.TypeString || timeUnitMillis(u.StringValue()) <= 0 {
			return nil, mongoerr.New(mongoerr.Location5490704, "%s 'unit' must be a fixed-length time unit, found %s", name, value.Format(u))
		}
		f.unitMs = timeUnitMillis(u.StringValue())
	}
	return f, nil
}

// axis reads a sortBy value as a number: a date in units when unit is set.
func (f *rateFunc) axis(v bsoncore.Value) (float64, bool) {
	if f.unitMs > 0 {
		if v.Type != bsoncore.TypeDateTime {
			return 0, false
		}
		return float64(v.DateTime()) / float64(f.unitMs), true
	}
	return value.ToFloat(v), value.IsNumber(v)
}

func (f *rateFunc) compute(ctx context.Context, p *partition) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	var interrupt interrupt.Pacer // per document and window member: windows make it quadratic
	for i := range p.docs {
		if err := interrupt.Check(ctx); err != nil {
			return nil, err
		}
		lo, hi, err := f.bounds.indices(p, i)
		if err != nil {
			return nil, err
		}
		var xs, ys []float64
		for j := lo; j < hi; j++ {
			if err := interrupt.Check(ctx); err != nil {
				return nil, err
			}
			y, err := f.input.eval(p.ctxs[j])
			if err != nil {
				return nil, err
			}
			x, ok := f.axis(p.keys[j])
			if !ok {
				return nil, mongoerr.New(mongoerr.Location5624901, "Expected the sortBy field to be a number or a date with 'unit'")
			}
			if value.IsNumber(y) {
				xs, ys = append(xs, x), append(ys, value.ToFloat(y))
			}
		}
		out[i] = f.fold(xs, ys)
	}
	return out, nil
}

func (f *rateFunc) fold(xs, ys []float64) bsoncore.Value {
	if !f.integral {
		if len(xs) < 2 || xs[len(xs)-1] == xs[0] {
			return value.Null
		}
		return value.Double((ys[len(ys)-1] - ys[0]) / (xs[len(xs)-1] - xs[0]))
	}
	if len(xs) == 0 {
		return value.Null
	}
	area := 0.0
	for j := 1; j < len(xs); j++ {
		area += (xs[j] - xs[j-1]) * (ys[j] + ys[j-1]) / 2
	}
	return value.Double(area)
}

// expMovingAvg is $expMovingAvg with N (alpha = 2/(N+1)) or alpha.
type expMovingAvg struct {
	input Expr
	alpha float64
}

func compileExpMovingAvg(w *windowSpec) (windowFunc, error) {
	arg, srt, s := w.arg, w.sort, w.scope
	if srt == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$expMovingAvg requires an explicit 'sortBy'")
	}
	exprs, raw, err := accArgs("$expMovingAvg", arg, s, []string{"input", "N", "alpha"}, []string{"input"})
	if err != nil {
		return nil, err
	}
	n, hasN := raw["N"]
	a, hasAlpha := raw["alpha"]
	switch {
	case hasN == hasAlpha:
		return nil, mongoerr.New(mongoerr.FailedToParse, "$expMovingAvg requires either 'N' or 'alpha' to be specified")
	case hasN && (!value.IsNumber(n) || value.ToFloat(n) < 1 || value.ToFloat(n) != float64(int64(value.ToFloat(n)))):
		return nil, mongoerr.New(mongoerr.FailedToParse, "'N' field must be an integer, but found type %s", value.TypeName(n.Type))
	case hasAlpha && (!value.IsNumber(a) || value.ToFloat(a) <= 0 || value.ToFloat(a) >= 1):
		return nil, mongoerr.New(mongoerr.FailedToParse, "'alpha' must be between 0 and 1 (exclusive), found %s", value.Format(a))
	}
	if hasN {
		return &expMovingAvg{input: exprs["input"], alpha: 2 / (value.ToFloat(n) + 1)}, nil
	}
	alpha := value.ToFloat(a)
	return &expMovingAvg{input: exprs["input"], alpha: alpha}, nil
}

func (e *expMovingAvg) compute(_ context.Context, p *partition) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	avg, have := 0.0, false
	for i := range p.docs {
		v, err := e.input.eval(p.ctxs[i])
		if err != nil {
			return nil, err
		}
		if value.IsNumber(v) {
			if have {
				avg = e.alpha*value.ToFloat(v) + (1-e.alpha)*avg
			} else {
				avg, have = value.ToFloat(v), true
			}
		}
		out[i] = value.Null
		if have {
			out[i] = value.Double(avg)
		}
	}
	return out, nil
}

// fillFunc is $locf (carry the last non-null value forward) or
// $linearFill (interpolate nulls between numeric neighbours by sortBy).
type fillFunc struct {
	linear bool
	x      Expr
}

func (f *fillFunc) compute(_ context.Context, p *partition) ([]bsoncore.Value, error) {
	vals := make([]bsoncore.Value, len(p.docs))
	for i := range p.docs {
		v, err := f.x.eval(p.ctxs[i])
		if err != nil {
			return nil, err
		}
		if v.Type == 0 {
			v = value.Null
		}
		vals[i] = v
	}
	if !f.linear {
		last := value.Null
		for i, v := range vals {
			if nullish(v) {
				vals[i] = last
			} else {
				last = v
			}
		}
		return vals, nil
	}
	prev := -1
	for i, v := range vals {
		if nullish(v) {
			continue
		}
		if !value.IsNumber(v) {
			return nil, mongoerr.New(mongoerr.Location605001, "$linearFill only supports numeric types")
		}
		if prev >= 0 && i-prev > 1 {
			x0, x1 := axisValue(p.keys[prev]), axisValue(p.keys[i])
			y0, y1 := value.ToFloat(vals[prev]), value.ToFloat(v)
			for j := prev + 1; j < i; j++ {
				xj := axisValue(p.keys[j])
				vals[j] = value.Double(y0 + (y1-y0)*(xj-x0)/(x1-x0))
			}
		}
		prev = i
	}
	return vals, nil
}

// axisValue reads a sortBy value as a number (dates in milliseconds).
func axisValue(v bsoncore.Value) float64 {
	switch {
	case v.Type == bsoncore.TypeDateTime:
		return float64(v.DateTime())
	case value.IsNumber(v):
		return value.ToFloat(v)
	}
	return 0
}
