package query

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Gap-filling stages: $densify adds documents for missing steps of a
// numeric or date field; $fill sets null or missing fields, by constant
// value (a $set) or by method (a $setWindowFields with $locf/$linearFill).

type densifySpec struct {
	field      string
	partition  []string
	step       bsoncore.Value
	unit       string
	bounds     string // "full", "partition" or "" for explicit lo/hi
	lo, hi     bsoncore.Value
	fieldParts []string
}

func compileDensifyStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$densify specification must be an object")
	}
	d := &densifySpec{}
	var rng bsoncore.Value
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "field":
			if v.Type != bsoncore.TypeString || v.StringValue() == "" || v.StringValue()[0] == '$' {
				return nil, mongoerr.New(mongoerr.Location5733601, "Cannot densify field %s: it must be a non-empty string not starting with '$'", value.Format(v))
			}
			if err := value.CheckNoNul(v.StringValue()); err != nil {
				return nil, err
			}
			d.field = v.StringValue()
		case "partitionByFields":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.partitionByFields' is the wrong type '%s', expected type 'array'", value.TypeName(v.Type))
			}
			for _, f := range value.ArrayValues(v.Data) {
				if f.Type != bsoncore.TypeString {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "$densify partitionByFields must be strings")
				}
				d.partition = append(d.partition, f.StringValue())
			}
		case "range":
			rng = v
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$densify.%s' is an unknown field.", k)
		}
	}
	if d.field == "" || rng.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$densify.field' and '$densify.range' are required")
	}
	if err := d.parseRange(rng.Data); err != nil {
		return nil, err
	}
	d.fieldParts = value.SplitPath(d.field)
	return func(in Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			docs, err := drainBudget(ctx, in, pc.budget("$densify"))
			if err != nil {
				return nil, err
			}
			out, err := d.run(ctx, docs)
			return &sliceStream{docs: out}, err
		})
	}, nil
}

func (d *densifySpec) parseRange(doc []byte) error {
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "step":
			if !value.IsNumber(v) || value.ToFloat(v) <= 0 {
				return mongoerr.New(mongoerr.Location5733401, "the step parameter in a range statement must be a strictly positive numeric value")
			}
			d.step = v
		case "unit":
			if v.Type != bsoncore.TypeString || timeUnitMillis(v.StringValue()) == 0 {
				return mongoerr.New(mongoerr.FailedToParse, "unknown time unit value: %s", value.Format(v))
			}
			d.unit = v.StringValue()
		case "bounds":
			switch {
			case v.Type == bsoncore.TypeString && (v.StringValue() == "full" || v.StringValue() == "partition"):
				d.bounds = v.StringValue()
			case v.Type == bsoncore.TypeArray && value.ArrayLen(v.Data) == 2:
				b := value.ArrayValues(v.Data)
				d.lo, d.hi = b[0], b[1]
				if value.Compare(d.lo, d.hi) > 0 {
					return mongoerr.New(mongoerr.Location5733402, "a bounding array in a range statement must have the lower bound first")
				}
			default:
				return mongoerr.New(mongoerr.Location5946800, "the bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates")
			}
		default:
			return mongoerr.New(mongoerr.Location40415, "BSON field '$densify.range.%s' is an unknown field.", k)
		}
	}
	if d.step.Type == 0 || (d.bounds == "" && d.lo.Type == 0) {
		return mongoerr.New(mongoerr.Location40414, "BSON field '$densify.range.step' and '$densify.range.bounds' are required")
	}
	if d.lo.Type != 0 && (d.lo.Type == bsoncore.TypeDateTime) != (d.unit != "") {
		return mongoerr.New(mongoerr.Location5733409, "numeric bounds may not have unit parameter, and date bounds need one")
	}
	return nil
}

// next steps a value forward.
func (d *densifySpec) next(v bsoncore.Value) bsoncore.Value {
	if d.unit != "" {
		return value.Date(addUnits(v.DateTime(), value.ToFloat(d.step), d.unit))
	}
	return widenArith(v, d.step, false)
}

func (d *densifySpec) valid(v bsoncore.Value) bool {
	if d.unit != "" {
		return v.Type == bsoncore.TypeDateTime
	}
	return value.IsNumber(v)
}

func (d *densifySpec) partKey(doc bsoncore.Document) bsoncore.Value {
	vals := make([]bsoncore.Value, len(d.partition))
	for i, f := range d.partition {
		vals[i] = nestedField(doc, value.SplitPath(f))
		if vals[i].Type == 0 {
			vals[i] = value.Null
		}
	}
	return value.BuildArray(vals)
}

func (d *densifySpec) run(ctx context.Context, docs []bsoncore.Document) ([]bsoncore.Document, error) {
	keys := make([]bsoncore.Value, len(docs))
	vals := make([]bsoncore.Value, len(docs))
	var gmin, gmax bsoncore.Value
	for i, doc := range docs {
		keys[i], vals[i] = d.partKey(doc), nestedField(doc, d.fieldParts)
		v := vals[i]
		if nullish(v) {
			continue
		}
		if !d.valid(v) {
			return nil, mongoerr.New(mongoerr.Location5733201, "Densify field type must be numeric or a date (with unit), found %s", value.TypeName(v.Type))
		}
		if gmin.Type == 0 || value.Compare(v, gmin) < 0 {
			gmin = v
		}
		if gmax.Type == 0 || value.Compare(v, gmax) > 0 {
			gmax = v
		}
	}
	idx := make([]int, len(docs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if c := value.Compare(keys[idx[a]], keys[idx[b]]); c != 0 {
			return c < 0
		}
		return exprCompareColl(vals[idx[a]], vals[idx[b]], nil) < 0
	})
	var out []bsoncore.Document
	// One count across partitions: a small input and a fine step make
	// the generated documents unbounded.
	var interrupt interrupt.Pacer
	for start := 0; start < len(idx); {
		end := start + 1
		for end < len(idx) && value.Compare(keys[idx[start]], keys[idx[end]]) == 0 {
			end++
		}
		part, err := d.densifyPartition(ctx, &interrupt, docs, vals, idx[start:end], gmin, gmax)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
		start = end
	}
	return out, nil
}

// densifyPartition walks one partition in field order, inserting a
// document at every missing step between the bounds.
func (d *densifySpec) densifyPartition(ctx context.Context, interrupt *interrupt.Pacer, docs []bsoncore.Document, vals []bsoncore.Value, idx []int, gmin, gmax bsoncore.Value) ([]bsoncore.Document, error) {
	lo, hi, inclusive := d.lo, d.hi, false
	switch d.bounds {
	case "full":
		lo, hi, inclusive = gmin, gmax, true
	case "partition":
		lo, hi, inclusive = bsoncore.Value{}, bsoncore.Value{}, true
		for _, i := range idx {
			if v := vals[i]; !nullish(v) {
				if lo.Type == 0 {
					lo = v
				}
				hi = v
			}
		}
	}
	var out []bsoncore.Document
	cur := lo
	within := func(v bsoncore.Value) bool {
		c := value.Compare(v, hi)
		return c < 0 || inclusive && c == 0
	}
	template := docs[idx[0]]
	for _, i := range idx {
		v := vals[i]
		for cur.Type != 0 && !nullish(v) && value.Compare(cur, v) < 0 && within(cur) {
			if err := interrupt.Check(ctx); err != nil {
				return nil, err
			}
			out = append(out, d.generated(template, cur))
			cur = d.next(cur)
		}
		for cur.Type != 0 && !nullish(v) && value.Compare(cur, v) == 0 {
			cur = d.next(cur)
		}
		out = append(out, docs[i])
	}
	for cur.Type != 0 && within(cur) {
		if err := interrupt.Check(ctx); err != nil {
			return nil, err
		}
		out = append(out, d.generated(template, cur))
		cur = d.next(cur)
	}
	return out, nil
}

// generated is a new document holding the partition fields and v.
func (d *densifySpec) generated(template bsoncore.Document, v bsoncore.Value) bsoncore.Document {
	doc := bsoncore.NewDocumentBuilder().Build()
	for _, f := range d.partition {
		if pv := nestedField(template, value.SplitPath(f)); pv.Type != 0 {
			doc = setField(doc, f, pv)
		}
	}
	return setField(doc, d.field, v)
}

func compileFillStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "$fill specification must be an object")
	}
	window := bsoncore.NewDocumentBuilder()
	values := bsoncore.NewDocumentBuilder()
	var sortBy, output bsoncore.Value
	hasMethod, hasValue := false, false
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "partitionBy":
			window.AppendValue("partitionBy", v)
		case "partitionByFields":
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$fill.partitionByFields' is the wrong type '%s', expected type 'array'", value.TypeName(v.Type))
			}
			pb := bsoncore.NewDocumentBuilder()
			for _, f := range value.ArrayValues(v.Data) {
				if f.Type != bsoncore.TypeString {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "$fill partitionByFields must be strings")
				}
				pb.AppendString(f.StringValue(), "$"+f.StringValue())
			}
			window.AppendDocument("partitionBy", pb.Build())
		case "sortBy":
			sortBy = v
			window.AppendValue("sortBy", v)
		case "output":
			output = v
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$fill.%s' is an unknown field.", k)
		}
	}
	if output.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$fill.output' is missing but a required field")
	}
	methods := bsoncore.NewDocumentBuilder()
	it = value.NewIter(output.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		field := string(k)
		method, _ := value.LookupField(v.Data, "method")
		fill, isValue := value.LookupField(v.Data, "value")
		switch {
		case v.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(v.Data) != 1:
			return nil, mongoerr.New(mongoerr.Location6050203, "Exactly one of 'value' or 'method' must be specified for output field %s", field)
		case isValue:
			hasValue = true
			values.AppendDocument(field, bsoncore.NewDocumentBuilder().AppendArray("$ifNull",
				bsoncore.NewArrayBuilder().AppendString("$"+field).AppendValue(fill).Build()).Build())
		case method.Type == bsoncore.TypeString && (method.StringValue() == "locf" || method.StringValue() == "linear"):
			if sortBy.Type == 0 && method.StringValue() == "linear" {
				return nil, mongoerr.New(mongoerr.Location6050204, "Method 'linear' requires a sortBy")
			}
			hasMethod = true
			fn := "$locf"
			if method.StringValue() == "linear" {
				fn = "$linearFill"
			}
			methods.AppendDocument(field, bsoncore.NewDocumentBuilder().AppendString(fn, "$"+field).Build())
		default:
			return nil, mongoerr.New(mongoerr.Location6050202, "Method must be either 'locf' or 'linear', found %s", value.Format(method))
		}
	}
	var stages []stage
	if hasMethod {
		window.AppendDocument("output", methods.Build())
		st, err := compileSetWindowFieldsStage(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: window.Build()}, pc)
		if err != nil {
			return nil, err
		}
		stages = append(stages, st)
	} else if sortBy.Type == bsoncore.TypeEmbeddedDocument {
		st, err := compileSortStage(sortBy, pc)
		if err != nil {
			return nil, err
		}
		stages = append(stages, st)
	}
	if hasValue {
		t, err := compileAddFields(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: values.Build()}, pc.env)
		if err != nil {
			return nil, err
		}
		stages = append(stages, transformStage(t))
	}
	return func(in Stream) Stream {
		for _, st := range stages {
			in = st(in)
		}
		return in
	}, nil
}
