package query

import (
	"context"
	"errors"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $setWindowFields: the input is sorted by (partitionBy, sortBy), and each
// output field is a window function computed over each partition.
// Accumulators take a window of documents (by position) or of a range of
// sortBy values; window_funcs.go holds the order-based functions.

// partition is the sorted documents sharing one partitionBy value.
type partition struct {
	docs []bsoncore.Document
	ctxs []*evalCtx
	keys []bsoncore.Value // the first sortBy field's value per document
	sort *Sort
}

// windowFunc computes one output field for every document of a partition.
type windowFunc interface {
	compute(ctx context.Context, p *partition) ([]bsoncore.Value, error)
}

type windowOutput struct {
	path []string
	fn   windowFunc
}

type windowStage struct {
	partitionBy Expr
	sort        *Sort
	outputs     []windowOutput
}

func compileSetWindowFieldsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $setWindowFields stage specification must be an object, found %s", value.TypeName(spec.Type))
	}
	w := &windowStage{}
	var output bsoncore.Value
	err := value.EachField(spec.Data, func(k string, v bsoncore.Value) (err error) {
		switch k {
		case "partitionBy":
			w.partitionBy, err = compileExpr(v, pc.env.scope())
		case "sortBy":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$setWindowFields.sortBy' is the wrong type '%s', expected type 'object'", value.TypeName(v.Type))
			}
			w.sort, err = CompileSortEnv(v.Data, pc.env)
		case "output":
			output = v
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '$setWindowFields.%s' is an unknown field.", k)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if output.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$setWindowFields.output' is missing but a required field")
	}
	it := value.NewIter(output.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		fn, err := compileWindowFunc(string(k), v, w.sort, pc)
		if err != nil {
			return nil, err
		}
		w.outputs = append(w.outputs, windowOutput{path: value.SplitPath(string(k)), fn: fn})
	}
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) { return w.run(ctx, in, pc) })
	}, nil
}

func (w *windowStage) run(ctx context.Context, in Stream, pc *pipeCtx) (Stream, error) {
	b := pc.budget("$setWindowFields")
	var docs []bsoncore.Document
	for {
		d, err := in.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, d)
		if err := b.add(len(d)); err != nil {
			return nil, err // over the limit without allowDiskUse: 292
		}
		if b.allowDisk && b.over() {
			return w.runSpilled(ctx, docs, in, pc, b)
		}
	}
	pkeys := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		if w.partitionBy != nil {
			var err error
			if pkeys[i], err = w.partitionBy.eval(newEvalCtx(d, pc.env)); err != nil {
				return nil, err
			}
		}
	}
	idx := make([]int, len(docs))
	for i := range idx {
		idx[i] = i
	}
	coll := pc.env.coll()
	sort.SliceStable(idx, func(a, b int) bool {
		if c := exprCompareColl(pkeys[idx[a]], pkeys[idx[b]], coll); c != 0 {
			return c < 0
		}
		return w.sort != nil && w.sort.Compare(docs[idx[a]], docs[idx[b]]) < 0
	})
	var out []bsoncore.Document
	for start := 0; start < len(idx); {
		end := start + 1
		for end < len(idx) && exprCompareColl(pkeys[idx[start]], pkeys[idx[end]], coll) == 0 {
			end++
		}
		p := &partition{sort: w.sort}
		for _, i := range idx[start:end] {
			w.addToPartition(p, docs[i], pc)
		}
		res, err := w.computePartition(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
		start = end
	}
	return &sliceStream{docs: out}, nil
}

func (w *windowStage) addToPartition(p *partition, d bsoncore.Document, pc *pipeCtx) {
	p.docs = append(p.docs, d)
	p.ctxs = append(p.ctxs, newEvalCtx(d, pc.env))
	p.keys = append(p.keys, w.sortKey(d))
}

// runSpilled is run past the memory budget with allowDiskUse: every
// document (those already read, then the rest of the input) is keyed as
// {k: <partitionBy value>, d: <document>} and sorted stably by
// (partitionBy, sortBy) through sortStream, which spills sorted runs to
// temporary files. The sorted records are then read back one partition at
// a time, and only that partition is held in memory while its window
// functions run, so the output (and its order) is the same as run's.
//
// A single partition must still fit in the memory limit: one larger than
// it fails with 292 even with allowDiskUse, since window functions need
// the whole partition at hand.
func (w *windowStage) runSpilled(ctx context.Context, kept []bsoncore.Document, rest Stream, pc *pipeCtx, b *memBudget) (Stream, error) {
	coll := pc.env.coll()
	partKey := func(d bsoncore.Document) (bsoncore.Value, error) {
		if w.partitionBy == nil {
			return value.Null, nil
		}
		k, err := w.partitionBy.eval(newEvalCtx(d, pc.env))
		if err != nil {
			return bsoncore.Value{}, err
		}
		if k.Type == 0 {
			k = value.Null // missing partitions with null
		}
		return k, nil
	}
	keyed := funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		var d bsoncore.Document
		if len(kept) > 0 {
			d, kept[0] = kept[0], nil
			kept = kept[1:]
		} else {
			var err error
			if d, err = rest.Next(ctx); err != nil {
				return nil, err
			}
		}
		k, err := partKey(d)
		if err != nil {
			return nil, err
		}
		return keyedRecord(k, d), nil
	})
	recordDoc := func(rec bsoncore.Document) bsoncore.Document {
		d, _ := value.LookupField(rec, "d")
		return d.Data
	}
	sorted, err := sortStream(ctx, keyed, func(a, c bsoncore.Document) int {
		if r := value.CompareWith(recordKey(a), recordKey(c), coll); r != 0 {
			return r
		}
		if w.sort == nil {
			return 0
		}
		return w.sort.Compare(recordDoc(a), recordDoc(c))
	}, b.spilling())
	if err != nil {
		return nil, err
	}
	var pending bsoncore.Document // the first record of the next partition
	var out []bsoncore.Document   // the current partition's output
	done := false
	return funcStream(func(ctx context.Context) (bsoncore.Document, error) {
		for len(out) == 0 {
			if done {
				return nil, io.EOF
			}
			if pending == nil {
				d, err := sorted.Next(ctx)
				if err != nil {
					return nil, err
				}
				pending = d
			}
			key := recordKey(pending)
			p := &partition{sort: w.sort}
			var used int64
			for {
				d := recordDoc(pending)
				if used += int64(len(d)); used > b.limit {
					return nil, tooLargeUnit(b.stage, "partition", b.limit)
				}
				w.addToPartition(p, d, pc)
				next, err := sorted.Next(ctx)
				if errors.Is(err, io.EOF) {
					done = true
					break
				}
				if err != nil {
					return nil, err
				}
				pending = next
				if value.CompareWith(key, recordKey(next), coll) != 0 {
					break
				}
			}
			res, err := w.computePartition(ctx, p)
			if err != nil {
				return nil, err
			}
			out = res
		}
		d := out[0]
		out = out[1:]
		return d, nil
	}), nil
}

// exprCompareColl compares partition keys, missing equal to null.
func exprCompareColl(a, b bsoncore.Value, coll *value.Collation) int {
	if a.Type == 0 {
		a = value.Null
	}
	if b.Type == 0 {
		b = value.Null
	}
	return value.CompareWith(a, b, coll)
}

func (w *windowStage) sortKey(d bsoncore.Document) bsoncore.Value {
	if w.sort == nil || len(w.sort.keys) == 0 {
		return bsoncore.Value{}
	}
	v, _ := value.LookupPath(d, strings.Join(w.sort.keys[0].parts, "."))
	return v
}

func (w *windowStage) computePartition(ctx context.Context, p *partition) ([]bsoncore.Document, error) {
	results := make([][]bsoncore.Value, len(w.outputs))
	for i, o := range w.outputs {
		r, err := o.fn.compute(ctx, p)
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	out := make([]bsoncore.Document, len(p.docs))
	for j, d := range p.docs {
		m := leafM(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
		for i, o := range w.outputs {
			setPathM(m, o.path, results[i][j])
		}
		out[j] = m.value().Data
	}
	return out, nil
}

// windowBounds is a window: by document position or by sortBy value.
type windowBounds struct {
	byRange              bool
	loUnbounded, hiUnbnd bool
	lo, hi               float64 // offsets; "current" is 0
	unit                 string  // range over dates
}

var wholePartition = windowBounds{loUnbounded: true, hiUnbnd: true}

func parseWindow(v bsoncore.Value, srt *Sort) (windowBounds, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return windowBounds{}, mongoerr.New(mongoerr.FailedToParse, "'window' field must be an object")
	}
	w := windowBounds{}
	var bounds bsoncore.Value
	it := value.NewIter(v.Data)
	for {
		k, e, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "documents":
			bounds = e
		case "range":
			bounds, w.byRange = e, true
		case "unit":
			if e.Type != bsoncore.TypeString || timeUnitMillis(e.StringValue()) == 0 {
				return w, mongoerr.New(mongoerr.FailedToParse, "unknown time unit value: %s", value.Format(e))
			}
			w.unit = e.StringValue()
		default:
			return w, mongoerr.New(mongoerr.FailedToParse, "'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field")
		}
	}
	if bounds.Type != bsoncore.TypeArray || value.ArrayLen(bounds.Data) != 2 {
		return w, mongoerr.New(mongoerr.FailedToParse, "Window bounds must be a 2-element array: %s", value.Format(bounds))
	}
	b := value.ArrayValues(bounds.Data)
	var err error
	if w.lo, w.loUnbounded, err = parseBound(b[0], w.byRange); err != nil {
		return w, err
	}
	if w.hi, w.hiUnbnd, err = parseBound(b[1], w.byRange); err != nil {
		return w, err
	}
	if !w.loUnbounded && !w.hiUnbnd && w.lo > w.hi {
		return w, mongoerr.New(mongoerr.Location5339900, "Lower bound must not exceed upper bound: %s", value.Format(bounds))
	}
	if w.byRange && (srt == nil || len(srt.keys) != 1) {
		return w, mongoerr.New(mongoerr.Location5339902, "Range-based bounds require sortBy a single field")
	}
	if !w.byRange && (srt == nil || len(srt.keys) == 0) && !(w.loUnbounded && w.hiUnbnd) {
		return w, mongoerr.New(mongoerr.Location5339901, "Document-based bounds require a sortBy")
	}
	return w, nil
}

func parseBound(v bsoncore.Value, byRange bool) (float64, bool, error) {
	if s, ok := v.StringValueOK(); ok {
		switch s {
		case "unbounded":
			return 0, true, nil
		case "current":
			return 0, false, nil
		}
	}
	if !value.IsNumber(v) || (!byRange && value.ToFloat(v) != math.Trunc(value.ToFloat(v))) {
		return 0, false, mongoerr.New(mongoerr.FailedToParse, "Numeric document-based bounds must be an integer, or 'current' or 'unbounded': %s", value.Format(v))
	}
	return value.ToFloat(v), false, nil
}

// timeUnitMillis is a fixed-length unit's length; months and longer are
// calendar units (addUnits handles them), reported as -1.
func timeUnitMillis(unit string) int64 {
	switch unit {
	case "millisecond":
		return 1
	case "second":
		return 1000
	case "minute":
		return 60 * 1000
	case "hour":
		return 3600 * 1000
	case "day":
		return 24 * 3600 * 1000
	case "week":
		return 7 * 24 * 3600 * 1000
	case "month", "quarter", "year":
		return -1
	}
	return 0
}

// addUnits adds n units to a date (UTC).
func addUnits(ms int64, n float64, unit string) int64 {
	if d := timeUnitMillis(unit); d > 0 {
		return ms + int64(n*float64(d))
	}
	t := time.UnixMilli(ms).UTC()
	switch unit {
	case "month":
		t = t.AddDate(0, int(n), 0)
	case "quarter":
		t = t.AddDate(0, 3*int(n), 0)
	case "year":
		t = t.AddDate(int(n), 0, 0)
	}
	return t.UnixMilli()
}

// indices returns the window [lo, hi) of document i.
func (w windowBounds) indices(p *partition, i int) (int, int, error) {
	n := len(p.docs)
	if !w.byRange {
		lo, hi := 0, n
		if !w.loUnbounded {
			lo = max(0, i+int(w.lo))
		}
		if !w.hiUnbnd {
			hi = min(n, i+int(w.hi)+1)
		}
		return lo, max(lo, hi), nil
	}
	k := p.keys[i]
	if !value.IsNumber(k) && k.Type != bsoncore.TypeDateTime {
		return 0, 0, mongoerr.New(mongoerr.Location5429413, "Invalid range: Expected the sortBy field to be a number or a date, but it was %s", exprTypeName(k))
	}
	if (k.Type == bsoncore.TypeDateTime) != (w.unit != "") {
		return 0, 0, mongoerr.New(mongoerr.Location5429513, "Invalid range: 'unit' must be given exactly when the sortBy field is a date")
	}
	inRange := func(v bsoncore.Value) bool {
		if w.unit != "" {
			if v.Type != bsoncore.TypeDateTime {
				return false
			}
			x := v.DateTime()
			return (w.loUnbounded || x >= addUnits(k.DateTime(), w.lo, w.unit)) && (w.hiUnbnd || x <= addUnits(k.DateTime(), w.hi, w.unit))
		}
		if !value.IsNumber(v) {
			return false
		}
		x, c := value.ToFloat(v), value.ToFloat(k)
		return (w.loUnbounded || x >= c+w.lo) && (w.hiUnbnd || x <= c+w.hi)
	}
	lo := 0
	for lo < n && !inRange(p.keys[lo]) {
		lo++
	}
	hi := lo
	for hi < n && inRange(p.keys[hi]) {
		hi++
	}
	return lo, hi, nil
}

// accWindow folds an accumulator over each document's window. A window
// whose lower bound is unbounded grows monotonically, so one accumulator
// is extended instead of refolding.
type accWindow struct {
	mk     accFactory
	bounds windowBounds
}

func (a *accWindow) compute(ctx context.Context, p *partition) ([]bsoncore.Value, error) {
	out := make([]bsoncore.Value, len(p.docs))
	var running accumulator
	added := 0
	var interrupt interrupt.Pacer // per document and window member: windows make it quadratic
	for i := range p.docs {
		if err := interrupt.Check(ctx); err != nil {
			return nil, err
		}
		lo, hi, err := a.bounds.indices(p, i)
		if err != nil {
			return nil, err
		}
		acc := a.mk()
		from := lo
		if a.bounds.loUnbounded && !a.bounds.byRange {
			if running == nil {
				running = a.mk()
			}
			acc, from = running, added
		}
		for j := from; j < hi; j++ {
			if err := interrupt.Check(ctx); err != nil {
				return nil, err
			}
			if _, err := acc.add(p.ctxs[j]); err != nil {
				return nil, err
			}
		}
		if acc == running {
			added = max(added, hi)
		}
		if out[i], err = acc.result(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
