package query_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/fuzzbson"
	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The fuzz targets compile a specification decoded from the fuzz input
// and run it on documents decoded from the rest of it. Every error must
// carry a user-facing code (fuzzbson.CheckUserError): the server answers
// anything else as InternalError. Outputs must be valid BSON.

type (
	D = bson.D
	A = bson.A
)

var d = fuzzbson.D

// sampleDocs are the documents most seeds run on.
var sampleDocs = []any{
	d("_id", 1, "a", 5, "b", "abc"),
	d("_id", 2, "a", A{1, d("b", 2), A{3}}, "c", nil),
	d("_id", "x", "a", d("b", 1.5, "c", A{}), "e", A{d("x", 1)}),
}

// seed is the fuzz input for specs followed by sampleDocs.
func seed(specs ...any) []byte {
	return fuzzbson.EncodeAll(append(specs, sampleDocs...)...)
}

// collation parses a fuzzed collation; an invalid one means none.
func collation(t *testing.T, doc bsoncore.Document) *value.Collation {
	c, err := value.ParseCollation(doc)
	fuzzbson.CheckUserError(t, "ParseCollation", err)
	return c
}

func FuzzFilter(f *testing.F) {
	for _, filter := range []D{
		d("a", d("$gt", 1)),
		d("a.b", d("$in", A{1, "abc", nil})),
		d("$or", A{d("a", 5), d("b", bson.Regex{Pattern: "^a", Options: "i"})}),
		d("a", d("$elemMatch", d("b", d("$exists", true)))),
		d("$expr", d("$eq", A{"$a", d("$size", "$c")})),
		d("a", d("$type", "array", "$size", 3)),
		d("a", d("$bitsAllSet", A{0, 2}), "b", d("$not", d("$mod", A{2, 0}))),
		d("$jsonSchema", d("required", A{"a"}, "properties", d("a", d("bsonType", "int")))),
	} {
		f.Add(seed(filter, D{}))
	}
	f.Add(seed(d("b", "ABC"), d("locale", "en", "strength", 2)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzbson.Documents(data, 2+len(sampleDocs))
		env, err := query.NewEnv(collation(t, in[1]), nil)
		fuzzbson.CheckUserError(t, "NewEnv", err)
		flt, err := query.CompileFilterEnv(in[0], env)
		fuzzbson.CheckUserError(t, "CompileFilter", err)
		if err != nil {
			return
		}
		for _, doc := range in[2:] {
			flt.Match(doc)
		}
		fuzzbson.CheckUserError(t, "Match", flt.Err())
	})
}

func FuzzUpdate(f *testing.F) {
	set := func(k string, v any) D { return d("$set", d(k, v)) }
	for _, u := range []D{
		set("a.b", 1),
		d("$inc", d("a", 2), "$unset", d("b", "")),
		d("$push", d("e", d("$each", A{1, 2}, "$slice", -1, "$sort", 1))),
		d("$rename", d("a", "z"), "$currentDate", d("d", true)),
		d("$pull", d("a", d("b", 2)), "$addToSet", d("c", 1)),
		d("$bit", d("a", d("xor", int32(3))), "$max", d("m", 9)),
		set("a.$[]", 0), set("e.$[e].x", 7), set("a.$", 1),
		d("a", 1, "z", A{}), // a replacement
	} {
		f.Add(false, seed(u, D{}, d("a", 5)))
	}
	f.Add(false, seed(set("e.$[e].x", 7), d("0", d("e.x", d("$gt", 0))), d("a", 5)))
	f.Add(false, seed(d("$rename", d("a", "x\x00y")), D{}, d("a", 5))) // a NUL is no field name
	f.Add(true, seed(d("0", d("$set", d("n", d("$add", A{"$a", 1}))), "1", d("$unset", "b")), D{}, D{}))
	f.Fuzz(func(t *testing.T, pipeline bool, data []byte) {
		in := fuzzbson.Documents(data, 3+len(sampleDocs))
		spec := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: in[0]}
		if pipeline {
			spec = bsoncore.Value{Type: bsoncore.TypeArray, Data: fuzzbson.Array(in[0])}
		}
		var afs []bsoncore.Document
		if vals, _ := in[1].Values(); len(vals) > 0 {
			for _, v := range vals {
				d, _ := v.DocumentOK()
				afs = append(afs, d)
			}
		}
		q, err := query.CompileFilter(in[2])
		fuzzbson.CheckUserError(t, "CompileFilter", err)
		u, err := query.CompileUpdateOpts(spec, query.UpdateOptions{Query: q, ArrayFilters: afs})
		fuzzbson.CheckUserError(t, "CompileUpdate", err)
		if err != nil {
			return
		}
		for i, doc := range in[3:] {
			if q != nil {
				q.Match(doc) // records what "$" refers to
			}
			out, _, err := u.Apply(doc, i == 0)
			fuzzbson.CheckUserError(t, "Apply", err)
			if err == nil {
				fuzzbson.CheckDocument(t, "Apply", out)
			}
		}
		if q != nil {
			if out, err := query.Upsert(q, u); err == nil {
				fuzzbson.CheckDocument(t, "Upsert", out)
			} else {
				fuzzbson.CheckUserError(t, "Upsert", err)
			}
		}
	})
}

func FuzzProjection(f *testing.F) {
	for _, p := range []D{
		d("a", 1, "_id", 0),
		d("a.b", 0),
		d("e", d("$elemMatch", d("x", 1))),
		d("a", d("$slice", A{1, 2})),
		d("a.$", 1),
		d("n", d("$concat", A{"$b", "x"}), "a", true),
		d("s", d("$meta", "textScore")),
	} {
		f.Add(false, seed(p, d("a", d("$gte", 2))))
		f.Add(true, seed(p, D{}))
	}
	f.Fuzz(func(t *testing.T, stage bool, data []byte) {
		in := fuzzbson.Documents(data, 2+len(sampleDocs))
		q, err := query.CompileFilter(in[1])
		fuzzbson.CheckUserError(t, "CompileFilter", err)
		opts := query.ProjectionOptions{Stage: stage}
		if !stage {
			opts.Query = q
		}
		p, err := query.CompileProjectionOpts(in[0], opts)
		fuzzbson.CheckUserError(t, "CompileProjection", err)
		if err != nil {
			return
		}
		for _, doc := range in[2:] {
			if q != nil {
				q.Match(doc)
			}
			out, err := p.Apply(doc)
			fuzzbson.CheckUserError(t, "Apply", err)
			if err == nil {
				fuzzbson.CheckDocument(t, "Apply", out)
			}
		}
	})
}

// FuzzSort checks that a sort is a consistent order on the documents: a
// document equals itself and swapping two flips their comparison.
// (Transitivity is left out: mongod's array sort keys break it too.)
func FuzzSort(f *testing.F) {
	for _, s := range []D{
		d("a", 1),
		d("a.b", -1, "_id", 1),
		d("b", 1),
		d("s", d("$meta", "textScore")),
		d("$natural", -1),
	} {
		f.Add(seed(s, D{}))
	}
	f.Add(seed(d("b", 1), d("locale", "fr", "strength", 1, "backwards", true)))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzbson.Documents(data, 2+len(sampleDocs))
		env, err := query.NewEnv(collation(t, in[1]), nil)
		fuzzbson.CheckUserError(t, "NewEnv", err)
		s, err := query.CompileSortEnv(in[0], env)
		fuzzbson.CheckUserError(t, "CompileSort", err)
		if err != nil {
			return
		}
		docs := in[2:]
		for _, a := range docs {
			if c := s.Compare(a, a); c != 0 {
				t.Fatalf("%v compares %d to itself", bson.Raw(a), c)
			}
			for _, b := range docs {
				if ab, ba := s.Compare(a, b), s.Compare(b, a); sign(ab) != -sign(ba) {
					t.Fatalf("%v vs %v: %d, reversed %d", bson.Raw(a), bson.Raw(b), ab, ba)
				}
			}
		}
	})
}

func sign(n int) int { return min(max(n, -1), 1) }

// pipelineLimits keep one fuzz input cheap: a small memory budget, a
// deadline and a cap on the documents drained.
const (
	pipelineMemory   = 1 << 20
	pipelineDeadline = time.Second
	pipelineMaxDocs  = 1000
)

func FuzzPipeline(f *testing.F) {
	stage := func(name string, spec any) D { return d(name, spec) }
	for _, p := range []A{
		{stage("$match", d("a", d("$gte", 1))), stage("$sort", d("b", -1))},
		{stage("$group", d("_id", "$b", "n", d("$sum", 1), "f", d("$first", "$a")))},
		{stage("$project", d("x", d("$add", A{"$a", 1}))), stage("$unwind", "$a")},
		{stage("$unwind", d("path", "$a", "includeArrayIndex", "i")), stage("$limit", 2), stage("$skip", 1)},
		{stage("$addFields", d("s", d("$split", A{"$b", "b"}))), stage("$count", "n")},
		{stage("$facet", d("f", A{stage("$sortByCount", "$b")}))},
		{stage("$bucket", d("groupBy", "$a", "boundaries", A{0, 5, 10}, "default", "o"))},
		{stage("$setWindowFields", d("sortBy", d("a", 1), "output", d("r", d("$rank", D{}))))},
		{stage("$densify", d("field", "a", "range", d("step", 1, "bounds", "full")))},
		{stage("$replaceRoot", d("newRoot", d("$mergeObjects", A{"$$ROOT", d("z", 1)}))), stage("$redact", "$$KEEP")},
		{stage("$documents", A{d("a", 1)}), stage("$fill", d("output", d("a", d("value", 0))))},
		{stage("$project", d("d", d("$dateToString", d("date", "$$NOW", "format", "%Y"))))},
		{stage("$unset", "x\x00"), stage("$project", d("o", d("$arrayToObject", A{A{A{"k\x00", 1}}})))},
	} {
		f.Add(seed(d("pipeline", p)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzbson.Documents(data, 1+len(sampleDocs))
		stages, _ := in[0].Lookup("pipeline").ArrayOK()
		if stages == nil {
			stages = fuzzbson.Array(in[0])
		}
		p, err := query.CompilePipelineOpts(stages, query.PipelineOptions{MemoryLimit: pipelineMemory, DB: "test", Collection: "c"})
		fuzzbson.CheckUserError(t, "CompilePipeline", err)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), pipelineDeadline)
		defer cancel()
		out := p.Run(query.NewSliceStream(in[1:]))
		for range pipelineMaxDocs {
			doc, err := out.Next(ctx)
			if errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			fuzzbson.CheckUserError(t, "pipeline", err)
			if err != nil {
				return
			}
			fuzzbson.CheckDocument(t, "pipeline", doc)
		}
	})
}

// FuzzCollation checks collation parsing, and that index keys order
// strings as the collation compares them: strings it finds equal must
// have one key.
func FuzzCollation(f *testing.F) {
	strs := d("0", "abc", "1", "ABC", "2", "é", "3", "e", "4", "a\x00b", "5", "10", "6", "9")
	for _, c := range []D{
		d("locale", "en"),
		d("locale", "en", "strength", 1),
		d("locale", "fr", "strength", 2, "backwards", true),
		d("locale", "en", "numericOrdering", true, "caseLevel", true),
		d("locale", "en", "strength", 5),
		d("locale", "en", "alternate", "shifted", "maxVariable", "space"),
		d("locale", "simple"),
	} {
		f.Add(fuzzbson.EncodeAll(c, strs))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzbson.Documents(data, 2)
		c := collation(t, in[0])
		if c == nil {
			return
		}
		again, err := value.ParseCollation(c.Expanded())
		if err != nil || !again.Equal(c) {
			t.Fatalf("expanded collation %v does not parse back: %v", bson.Raw(c.Expanded()), err)
		}
		vals, _ := in[1].Values()
		for _, a := range vals {
			for _, b := range vals {
				checkCollatedOrder(t, c, a, b)
			}
		}
	})
}

func checkCollatedOrder(t *testing.T, c *value.Collation, a, b bsoncore.Value) {
	sa, okA := a.StringValueOK()
	sb, okB := b.StringValueOK()
	if !okA || !okB {
		return
	}
	byKey := bytes.Compare(c.AppendKey(nil, []byte(sa)), c.AppendKey(nil, []byte(sb)))
	if cmp := value.CompareCollated(a, b, c); sign(cmp) != byKey {
		t.Fatalf("%q vs %q: compare says %d, keys say %d", sa, sb, cmp, byKey)
	}
}
