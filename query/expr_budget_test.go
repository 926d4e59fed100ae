package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// The expressions' memory and time bounds (expr_budget.go): each operator
// that builds values fails with ExceededMemoryLimit once what the
// evaluation holds passes the limit, and a done context stops the loops
// of an evaluation that would otherwise run for hours. The inputs come
// from the document (field paths build nothing), so that the operator
// under test is the one that passes the limit.

// budgetDoc is a document of inputs: a of 10000 ints, s of 2000 bytes, m
// of 600 KB, strs of 1000 distinct 600-byte strings, obj and obj2 of 20000
// fields each, kv of 1000 [name, 600-byte string] pairs.
func budgetDoc() bsoncore.Document {
	a := bsoncore.NewArrayBuilder()
	for i := 0; i < 10000; i++ {
		a.AppendInt32(int32(i))
	}
	strs, kv := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	for i := 0; i < 1000; i++ {
		s := fmt.Sprintf("%04d", i) + strings.Repeat("y", 596)
		strs.AppendString(s)
		kv.AppendArray(bsoncore.NewArrayBuilder().AppendString(fmt.Sprintf("k%d", i)).AppendString(s).Build())
	}
	obj, obj2 := bsoncore.NewDocumentBuilder(), bsoncore.NewDocumentBuilder()
	for i := 0; i < 20000; i++ {
		obj.AppendInt32(fmt.Sprintf("f%05d", i), 1)
		obj2.AppendInt32(fmt.Sprintf("g%05d", i), 1)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("a", a.Build()).
		AppendString("s", strings.Repeat("x", 2000)).AppendString("m", strings.Repeat("x", 600000)).
		AppendArray("strs", strs.Build()).AppendDocument("obj", obj.Build()).AppendDocument("obj2", obj2.Build()).
		AppendArray("kv", kv.Build()).Build()
}

// budgetEnv is an Env whose evaluations may hold limit bytes.
func budgetEnv(t *testing.T, limit int64) *Env {
	t.Helper()
	env, err := NewEnv(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.ctx.exprLimit = limit
	return env
}

// projectUnder runs {$project: {x: expr}} over doc under ctx.
func projectUnder(ctx context.Context, t *testing.T, env *Env, expr string, doc bsoncore.Document) error {
	t.Helper()
	return runUntil(ctx, t, `[{"$project": {"x": `+expr+`}}]`, PipelineOptions{Env: env}, NewSliceStream([]bsoncore.Document{doc}))
}

func TestExpressionMemoryLimit(t *testing.T) {
	const mib = 1 << 20
	doc := budgetDoc()
	cases := []struct {
		op, expr string
		limit    int64
	}{
		{"$range", `{"$range": [0, 100000]}`, mib},
		{"$concatArrays", `{"$concatArrays": ["$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a", "$a"]}`, mib},
		{"$map", `{"$map": {"input": "$a", "in": "$s"}}`, mib},
		{"$filter", `{"$filter": {"input": {"$concatArrays": ["$strs"]}, "cond": true}}`, mib},
		{"$reduce", `{"$reduce": {"input": "$a", "initialValue": null, "in": {"$cond": [true, "$m", null]}}}`, mib / 2},
		{"$zip", `{"$zip": {"inputs": ["$a", []], "useLongestLength": true, "defaults": [0, "$s"]}}`, mib},
		{"$replaceAll", `{"$replaceAll": {"input": "$s", "find": "x", "replacement": "$s"}}`, mib},
		{"$replaceOne", `{"$replaceOne": {"input": "$m", "find": "x", "replacement": "$m"}}`, mib},
		{"$concat", `{"$concat": ["$m", "$m"]}`, mib},
		{"$split", `{"$split": ["$m", "x"]}`, mib},
		{"$toUpper", `{"$toUpper": "$m"}`, mib / 2},
		{"$setUnion", `{"$setUnion": ["$strs", "$strs"]}`, mib},
		{"$setIntersection", `{"$setIntersection": ["$strs", "$strs"]}`, mib},
		{"$setDifference", `{"$setDifference": ["$strs", "$strs"]}`, mib},
		{"$reverseArray", `{"$reverseArray": "$strs"}`, mib / 2},
		{"$sortArray", `{"$sortArray": {"input": "$strs", "sortBy": -1}}`, mib / 2},
		{"$objectToArray", `{"$objectToArray": "$obj"}`, mib / 2},
		{"$arrayToObject", `{"$arrayToObject": "$kv"}`, mib / 2},
		{"$mergeObjects", `{"$mergeObjects": ["$obj", "$obj2"]}`, 400 << 10},
		{"$regexFindAll", `{"$regexFindAll": {"input": "$m", "regex": "x"}}`, mib},
		{"$object", `{"$let": {"vars": {}, "in": {"a": "$m", "b": "$m"}}}`, mib},
		{"$array", `["$m", "$m"]`, mib},
		{"$concat", `{"$let": {"vars": {"a": {"$concat": ["$m", "a"]}, "b": {"$concat": ["$m", "b"]}}, "in": 1}}`, mib},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) {
			err := projectUnder(context.Background(), t, budgetEnv(t, c.limit), c.expr, doc)
			wantCode(t, err, mongoerr.ExceededMemoryLimit)
			if !strings.HasPrefix(err.Error(), c.op+" ") || !strings.Contains(err.Error(), "too much memory") {
				t.Fatalf("message %q, want one of %s needing too much memory", err, c.op)
			}
		})
	}
}

// TestExpressionMemoryLimitFits: under the same limits, the same
// operators over smaller inputs succeed, their temporaries not counted
// once they are garbage.
func TestExpressionMemoryLimitFits(t *testing.T) {
	doc := budgetDoc()
	for _, expr := range []string{
		`{"$range": [0, 60000]}`,
		`{"$size": {"$map": {"input": {"$range": [0, 100]}, "in": {"$size": {"$range": [0, 50000]}}}}}`,
		`{"$reduce": {"input": {"$range": [0, 400]}, "initialValue": "", "in": {"$concat": ["$$value", "$s"]}}}`,
		`{"$strLenBytes": {"$reduce": {"input": {"$range": [0, 300]}, "initialValue": "", "in": {"$concat": ["$$value", "$s"]}}}}`,
		`{"$size": {"$setUnion": ["$a", "$a"]}}`,
		`{"$size": {"$objectToArray": "$obj"}}`,
		`{"a": {"$strLenBytes": {"$concat": ["$m", "$m"]}}, "b": {"$strLenBytes": {"$concat": ["$m", "$m"]}}}`,
	} {
		if err := projectUnder(context.Background(), t, budgetEnv(t, 2<<20), expr, doc); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
	}
}

// TestRangeMemoryLimitMessage: $range refuses before building, with
// mongod's message and its reckoning of 16 bytes an element.
func TestRangeMemoryLimitMessage(t *testing.T) {
	err := projectUnder(context.Background(), t, budgetEnv(t, 1<<20), `{"$range": [0, 100000]}`, budgetDoc())
	wantCode(t, err, mongoerr.ExceededMemoryLimit)
	want := "$range would use too much memory (1600016 bytes) and cannot spill to disk. Memory limit: 1048576 bytes"
	if err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

// TestExpressionBombs: the bombs that once took gigabytes fail, the
// $range at the default limit before building anything, the doubling
// $reduce (whose arrays reach the limit however high) at a lower one, to
// be quick.
func TestExpressionBombs(t *testing.T) {
	for p, limit := range map[string]int64{
		`[{"$documents": [{"x": {"$size": {"$range": [0, 100000000]}}}]}]`:                                                                                        0,
		`[{"$documents": [{"x": {"$size": {"$reduce": {"input": {"$range": [0, 30]}, "initialValue": [0], "in": {"$concatArrays": ["$$value", "$$value"]}}}}}]}]`: 4 << 20,
	} {
		err := runUntil(context.Background(), t, p, PipelineOptions{Env: budgetEnv(t, limit), Collectionless: true}, nil)
		wantCode(t, err, mongoerr.ExceededMemoryLimit)
	}
}

// endless are expressions of 10^12 steps that build little at a time:
// only their context stops them.
var endless = map[string]string{
	"$range":        `{"$sum": {"$map": {"input": {"$range": [0, 1000000]}, "in": {"$size": {"$range": [0, 1000000]}}}}}`,
	"$map":          `{"$size": {"$map": {"input": {"$range": [0, 1000000]}, "in": {"$size": {"$map": {"input": {"$range": [0, 1000000]}, "in": 1}}}}}}`,
	"$filter":       `{"$size": {"$filter": {"input": {"$range": [0, 1000000]}, "cond": {"$in": [-1, {"$range": [0, 1000000]}]}}}}`,
	"$reduce":       `{"$reduce": {"input": {"$range": [0, 1000000]}, "initialValue": 0, "in": {"$add": ["$$value", {"$reduce": {"input": {"$range": [0, 1000000]}, "initialValue": 0, "in": {"$add": ["$$value", 1]}}}]}}}`,
	"$setIsSubset":  `{"$map": {"input": {"$range": [0, 1000000]}, "in": {"$setIsSubset": [{"$range": [0, 1000000]}, {"$range": [0, 1000000]}]}}}`,
	"$indexOfArray": `{"$map": {"input": {"$range": [0, 1000000]}, "in": {"$indexOfArray": [{"$range": [0, 1000000]}, -1]}}}`,
	"$sortArray":    `{"$map": {"input": {"$range": [0, 1000000]}, "in": {"$sortArray": {"input": {"$range": [0, 1000000]}, "sortBy": -1}}}}`,
}

// stopsWithin runs run and fails the test unless it returns within d.
func stopsWithin(t *testing.T, d time.Duration, run func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- run() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still running after %v", d)
		return nil
	}
}

// TestExpressionLoopsStopWithTheirContext: maxTimeMS (a deadline) and
// killOp or a hang-up (a cancellation) stop an expression's loops, in a
// pipeline, a $match's $expr and a find's projection. The bound is
// generous, for a loaded machine: the checks come every few
// milliseconds.
func TestExpressionLoopsStopWithTheirContext(t *testing.T) {
	doc := []bsoncore.Document{bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()}
	for op, expr := range endless {
		t.Run(op+" deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			err := stopsWithin(t, 20*time.Second, func() error { return projectUnder(ctx, t, budgetEnv(t, 0), expr, doc[0]) })
			wantCode(t, err, mongoerr.MaxTimeMSExpired)
		})
		t.Run(op+" cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			err := stopsWithin(t, 20*time.Second, func() error {
				return runUntil(ctx, t, `[{"$match": {"$expr": `+expr+`}}]`, PipelineOptions{Env: budgetEnv(t, 0)}, NewSliceStream(doc))
			})
			wantCode(t, err, mongoerr.Interrupted)
		})
	}
	t.Run("filter", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		f, err := CompileFilterEnv(mustValue(t, `{"$expr": `+endless["$map"]+`}`).Data, budgetEnv(t, 0))
		if err != nil {
			t.Fatal(err)
		}
		err = stopsWithin(t, 20*time.Second, func() error {
			f.MatchContext(ctx, doc[0])
			return f.Err()
		})
		wantCode(t, err, mongoerr.MaxTimeMSExpired)
	})
	t.Run("projection", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		p, err := CompileProjectionOpts(mustValue(t, `{"x": `+endless["$reduce"]+`}`).Data, ProjectionOptions{Env: budgetEnv(t, 0)})
		if err != nil {
			t.Fatal(err)
		}
		err = stopsWithin(t, 20*time.Second, func() error {
			_, err := p.ApplyContext(ctx, doc[0])
			return err
		})
		wantCode(t, err, mongoerr.Interrupted)
	})
	t.Run("let", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		err := stopsWithin(t, 20*time.Second, func() error {
			_, err := NewCommandEnv(ctx, nil, mustValue(t, `{"x": `+endless["$range"]+`}`).Data, nil, "")
			return err
		})
		wantCode(t, err, mongoerr.MaxTimeMSExpired)
	})
}

// TestExpressionContextLeftBehind: a pipeline's or a filter's context
// is the env's only while they run, so that an evaluation after them,
// without a context of its own, is not stopped by theirs having ended.
func TestExpressionContextLeftBehind(t *testing.T) {
	env := budgetEnv(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	if err := runUntil(ctx, t, `[{"$project": {"x": 1}}]`, PipelineOptions{Env: env}, NewSliceStream([]bsoncore.Document{doc})); err != nil {
		t.Fatal(err)
	}
	f, err := CompileFilterEnv(mustValue(t, `{"$expr": true}`).Data, env)
	if err != nil {
		t.Fatal(err)
	}
	f.MatchContext(ctx, doc)
	cancel()
	p, err := CompileProjectionOpts(mustValue(t, `{"x": {"$size": {"$range": [0, 1000000]}}}`).Data, ProjectionOptions{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(doc); err != nil {
		t.Fatal(err)
	}
}

// TestIndexOfIsLinear: $indexOfBytes and $indexOfCP over a long string
// answer at once (they were quadratic), with their bounds as before.
func TestIndexOfIsLinear(t *testing.T) {
	doc := bsoncore.NewDocumentBuilder().AppendString("s", strings.Repeat("é", 300000)+"ab").Build()
	for expr, want := range map[string]int32{
		`{"$indexOfCP": ["$s", "ab"]}`:               300000,
		`{"$indexOfBytes": ["$s", "ab"]}`:            600000,
		`{"$indexOfCP": ["$s", "ab", 5, 300001]}`:    -1,
		`{"$indexOfCP": ["$s", "é", 7]}`:             7,
		`{"$indexOfBytes": ["$s", "", 4]}`:           4,
		`{"$indexOfCP": ["$s", "", 400000]}`:         -1,
		`{"$indexOfCP": [{"$literal": "aéb"}, "b"]}`: 2,
	} {
		x, err := CompileExpr(mustValue(t, expr), nil)
		if err != nil {
			t.Fatal(err)
		}
		v, err := stopsWithinValue(t, x, doc)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if got, _ := v.Int32OK(); got != want {
			t.Errorf("%s = %v, want %d", expr, v, want)
		}
	}
}

// stopsWithinValue evaluates x over doc, failing the test if it takes
// more than a few seconds.
func stopsWithinValue(t *testing.T, x Expr, doc bsoncore.Document) (bsoncore.Value, error) {
	t.Helper()
	var v bsoncore.Value
	err := stopsWithin(t, 10*time.Second, func() (err error) {
		v, err = EvalExpr(x, doc, nil)
		return err
	})
	return v, err
}
