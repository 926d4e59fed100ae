package server_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/server"
)

// Server-side JavaScript through the Go driver: $where in every command
// that takes a query, $function, $accumulator, mapReduce with each out,
// the time and memory bounds, and --noscripting.

func jsFixture(t *testing.T, configure ...func(*server.Config)) (*mongo.Database, *mongo.Collection) {
	t.Helper()
	db := startServer(t, configure...).client().Database("jsdb")
	c := db.Collection("c")
	docs := []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "g", Value: "a"}, {Key: "n", Value: 1}, {Key: "tags", Value: bson.A{"x", "y"}}},
		bson.D{{Key: "_id", Value: 2}, {Key: "g", Value: "b"}, {Key: "n", Value: 2}, {Key: "tags", Value: bson.A{"y"}}},
		bson.D{{Key: "_id", Value: 3}, {Key: "g", Value: "a"}, {Key: "n", Value: 3}, {Key: "tags", Value: bson.A{"x", "z"}}},
	}
	if _, err := c.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	return db, c
}

// whereIDs is the _ids a find of filter returns, in _id order.
func whereIDs(t *testing.T, c *mongo.Collection, filter any) string {
	t.Helper()
	cur, err := c.Find(ctx, filter, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, d := range docs {
		out = append(out, get(d, "_id"))
	}
	return js(bson.M{"ids": out})
}

func TestJSWhere(t *testing.T) {
	db, c := jsFixture(t)
	code := bson.JavaScript("function() { return this.n >= 2 }")
	if got := whereIDs(t, c, bson.D{{Key: "$where", Value: code}}); got != `{"ids":[2,3]}` {
		t.Errorf("find: %s", got)
	}
	if got := whereIDs(t, c, bson.D{{Key: "$where", Value: "obj.g == 'a'"}}); got != `{"ids":[1,3]}` {
		t.Errorf("find with a string: %s", got)
	}
	ex := mustRun(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$where", Value: code}}}}}, {Key: "verbosity", Value: "executionStats"}})
	if num(get(ex, "executionStats", "nReturned")) != 2 {
		t.Errorf("explain: %v", get(ex, "executionStats"))
	}
	// countDocuments is an aggregation: its $match refuses $where, as mongod's
	_, err := c.CountDocuments(ctx, bson.D{{Key: "$where", Value: code}})
	wantCode(t, err, 2, "BadValue")
	out := mustRun(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bson.D{{Key: "$where", Value: code}}}})
	if num(out["n"]) != 2 {
		t.Errorf("count: %v", out)
	}
	var vals []string
	if err := c.Distinct(ctx, "g", bson.D{{Key: "$where", Value: "this.n != 2"}}).Decode(&vals); err != nil || len(vals) != 1 || vals[0] != "a" {
		t.Errorf("distinct: %v, %v", vals, err)
	}
	if r, err := c.UpdateMany(ctx, bson.D{{Key: "$where", Value: "this.g == 'a'"}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}}); err != nil || r.ModifiedCount != 2 {
		t.Errorf("updateMany: %+v, %v", r, err)
	}
	var fm bson.D
	if err := c.FindOneAndUpdate(ctx, bson.D{{Key: "$where", Value: "this.n == 2"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "m", Value: true}}}}).Decode(&fm); err != nil || num(get(fm, "_id")) != 2 {
		t.Errorf("findAndModify: %v, %v", fm, err)
	}
	if r, err := c.DeleteOne(ctx, bson.D{{Key: "$where", Value: "this.n > 12"}}); err != nil || r.DeletedCount != 1 {
		t.Errorf("deleteOne: %+v, %v", r, err)
	}
	// in an aggregation's $match, as on mongod, it is refused
	_, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "$where", Value: "true"}}}}})
	wantCode(t, err, 2, "BadValue")
	_, err = run(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "c"},
		{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "$where", Value: "true"}}}}}}, {Key: "cursor", Value: bson.D{}}}}})
	wantCode(t, err, 2, "BadValue")
	// an error of the user's code fails every command, none matches nothing
	bad := bson.D{{Key: "$where", Value: "throw new Error('nope')"}}
	_, err = c.Find(ctx, bad)
	wantCode(t, err, 139, "JSInterpreterFailure")
	_, err = c.UpdateMany(ctx, bad, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}})
	wantWriteCode(t, err, 139)
	_, err = c.DeleteMany(ctx, bad)
	wantWriteCode(t, err, 139)
	_, err = run(t, db, bson.D{{Key: "count", Value: "c"}, {Key: "query", Value: bad}})
	wantCode(t, err, 139, "JSInterpreterFailure")
	err = c.FindOneAndDelete(ctx, bad).Err()
	wantCode(t, err, 139, "JSInterpreterFailure")
}

// wantWriteCode asserts a write that failed with code, as a command error
// or a write error.
func wantWriteCode(t *testing.T, err error, code int) {
	t.Helper()
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		if we.WriteErrors[0].Code != code {
			t.Fatalf("want write error %d, got %v", code, we)
		}
		return
	}
	wantCode(t, err, int32(code), "")
}

func TestJSFunction(t *testing.T) {
	_, c := jsFixture(t)
	fn := bson.D{{Key: "$function", Value: bson.D{
		{Key: "body", Value: bson.JavaScript("function(n, tags) { return n * 10 + tags.length }")},
		{Key: "args", Value: bson.A{"$n", "$tags"}},
		{Key: "lang", Value: "js"},
	}}}
	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$project", Value: bson.D{{Key: "v", Value: fn}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if got := js(docs); got != `[{"_id":1,"v":12.0},{"_id":2,"v":21.0},{"_id":3,"v":32.0}]` {
		t.Errorf("$project: %s", got)
	}
	// in $expr of a find
	cond := bson.D{{Key: "$function", Value: bson.D{{Key: "body", Value: "function(g) { return g == 'b' }"}, {Key: "args", Value: bson.A{"$g"}}, {Key: "lang", Value: "js"}}}}
	if got := whereIDs(t, c, bson.D{{Key: "$expr", Value: cond}}); got != `{"ids":[2]}` {
		t.Errorf("$expr: %s", got)
	}
	// a validator refuses it, as mongod does
	err = c.Database().CreateCollection(ctx, "v", options.CreateCollection().SetValidator(bson.D{{Key: "$expr", Value: cond}}))
	wantCode(t, err, 4660800, "")
}

func TestJSAccumulator(t *testing.T) {
	_, c := jsFixture(t)
	acc := bson.D{{Key: "$accumulator", Value: bson.D{
		{Key: "init", Value: bson.JavaScript("function() { return {count: 0, sum: 0} }")},
		{Key: "accumulate", Value: bson.JavaScript("function(st, n) { return {count: st.count + 1, sum: st.sum + n} }")},
		{Key: "accumulateArgs", Value: bson.A{"$n"}},
		{Key: "merge", Value: bson.JavaScript("function(a, b) { return {count: a.count + b.count, sum: a.sum + b.sum} }")},
		{Key: "finalize", Value: bson.JavaScript("function(st) { return st.sum / st.count }")},
		{Key: "lang", Value: "js"},
	}}}
	cur, err := c.Aggregate(ctx, mongo.Pipeline{
		{{Key: "$group", Value: bson.D{{Key: "_id", Value: "$g"}, {Key: "avg", Value: acc}}}},
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if got := js(docs); got != `[{"_id":"a","avg":2.0},{"_id":"b","avg":2.0}]` {
		t.Errorf("$group: %s", got)
	}
	_, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$setWindowFields", Value: bson.D{{Key: "output", Value: bson.D{{Key: "r", Value: acc}}}}}}})
	wantCode(t, err, 9, "FailedToParse")
}

func TestJSMapReduce(t *testing.T) {
	db, _ := jsFixture(t)
	mapFn := bson.JavaScript("function() { this.tags.forEach(function(t) { emit(t, 1) }) }")
	reduceFn := bson.JavaScript("function(key, vals) { return Array.sum(vals) }")
	mr := func(out any, extra ...bson.E) (bson.M, error) {
		cmd := bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: mapFn}, {Key: "reduce", Value: reduceFn}, {Key: "out", Value: out}}
		return run(t, db, append(cmd, extra...))
	}
	out, err := mr(bson.D{{Key: "inline", Value: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(bson.M{"r": out["results"]}); got != `{"r":[{"_id":"x","value":2.0},{"_id":"y","value":2.0},{"_id":"z","value":1.0}]}` {
		t.Errorf("inline: %s", got)
	}
	// query, sort, limit, scope, finalize
	out, err = mr(bson.D{{Key: "inline", Value: 1}},
		bson.E{Key: "query", Value: bson.D{{Key: "g", Value: "a"}}},
		bson.E{Key: "sort", Value: bson.D{{Key: "n", Value: -1}}},
		bson.E{Key: "limit", Value: 1},
		bson.E{Key: "scope", Value: bson.D{{Key: "factor", Value: 100}}},
		bson.E{Key: "finalize", Value: bson.JavaScript("function(k, v) { return v * factor }")},
		bson.E{Key: "jsMode", Value: true}, bson.E{Key: "verbose", Value: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(bson.M{"r": out["results"]}); got != `{"r":[{"_id":"x","value":100.0},{"_id":"z","value":100.0}]}` {
		t.Errorf("query/sort/limit/scope/finalize: %s", got)
	}
	readOut := func(db *mongo.Database, coll string) string {
		cur, err := db.Collection(coll).Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.D
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		return js(docs)
	}
	// out: a collection name replaces it
	if _, err := db.Collection("o").InsertOne(ctx, bson.D{{Key: "_id", Value: "old"}}); err != nil {
		t.Fatal(err)
	}
	out, err = mr("o")
	if err != nil || out["result"] != "o" {
		t.Fatalf("out: o: %v, %v", out, err)
	}
	if got := readOut(db, "o"); got != `[{"_id":"x","value":2.0},{"_id":"y","value":2.0},{"_id":"z","value":1.0}]` {
		t.Errorf("replace: %s", got)
	}
	// merge keeps the other documents and replaces those of the same key
	if _, err := db.Collection("o").InsertOne(ctx, bson.D{{Key: "_id", Value: "w"}, {Key: "value", Value: 5}}); err != nil {
		t.Fatal(err)
	}
	if _, err := mr(bson.D{{Key: "merge", Value: "o"}}, bson.E{Key: "query", Value: bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	if got := readOut(db, "o"); got != `[{"_id":"w","value":5},{"_id":"x","value":2.0},{"_id":"y","value":1.0},{"_id":"z","value":1.0}]` {
		t.Errorf("merge: %s", got)
	}
	// reduce folds the new values into the stored ones
	if _, err := mr(bson.D{{Key: "reduce", Value: "o"}}); err != nil {
		t.Fatal(err)
	}
	if got := readOut(db, "o"); got != `[{"_id":"w","value":5},{"_id":"x","value":4.0},{"_id":"y","value":3.0},{"_id":"z","value":2.0}]` {
		t.Errorf("reduce: %s", got)
	}
	// another database: the reply names it
	out, err = mr(bson.D{{Key: "replace", Value: "o2"}, {Key: "db", Value: "otherdb"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(out["result"]); got != `{"db":"otherdb","collection":"o2"}` {
		t.Errorf("result: %s", got)
	}
	if got := readOut(db.Client().Database("otherdb"), "o2"); got != `[{"_id":"x","value":2.0},{"_id":"y","value":2.0},{"_id":"z","value":1.0}]` {
		t.Errorf("other db: %s", got)
	}
	// the argument layer
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: mapFn}, {Key: "reduce", Value: reduceFn}})
	wantCode(t, err, 40414, "")
	_, err = mr(bson.D{{Key: "inline", Value: 1}}, bson.E{Key: "bogus", Value: 1})
	wantCode(t, err, 40415, "")
	_, err = mr(bson.D{{Key: "inline", Value: 1}}, bson.E{Key: "limit", Value: "x"})
	wantCode(t, err, 14, "TypeMismatch")
	_, err = mr(bson.D{{Key: "replace", Value: "o"}, {Key: "sharded", Value: true}})
	wantCode(t, err, 72, "InvalidOptions")
	_, err = mr(bson.D{{Key: "merge", Value: "o"}, {Key: "nonAtomic", Value: false}})
	wantCode(t, err, 2, "BadValue")
	_, err = mr(bson.D{{Key: "inline", Value: 1}, {Key: "db", Value: "x"}})
	wantCode(t, err, 72, "InvalidOptions")
	_, err = mr(bson.D{{Key: "merge", Value: "o"}, {Key: "db", Value: "admin"}})
	wantCode(t, err, 115, "CommandNotSupported")
	_, err = mr(5)
	wantCode(t, err, 2, "BadValue")
	_, err = mr(bson.D{{Key: "inline", Value: 1}}, bson.E{Key: "limit", Value: 0})
	wantCode(t, err, 15958, "")
	_, err = mr(bson.D{{Key: "inline", Value: 1}}, bson.E{Key: "sort", Value: bson.D{}})
	wantCode(t, err, 15976, "")
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { emit(this._id, this.nope.x) }"}, {Key: "reduce", Value: reduceFn}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	wantCode(t, err, 139, "JSInterpreterFailure")
	if msg := err.(mongo.CommandError).Message; !strings.HasPrefix(msg, "MapReduce internal error :: caused by :: TypeError: Cannot read property 'x' of undefined") {
		t.Errorf("message %q", msg)
	}
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { emit(this._id) }"}, {Key: "reduce", Value: reduceFn}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	wantCode(t, err, 31220, "")
	// reduce runs for a key of one value too, as mongod 8's does
	out, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { emit(this.g, NumberInt(this.n)) }"},
		{Key: "reduce", Value: "function(k, vals) { return {k: k, n: vals.length} }"}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := js(bson.M{"r": out["results"]}); got != `{"r":[{"_id":"a","value":{"k":"a","n":2.0}},{"_id":"b","value":{"k":"b","n":1.0}}]}` {
		t.Errorf("one value: %s", got)
	}
	if _, err := db.Collection("c").Database().RunCommand(ctx, bson.D{{Key: "create", Value: "view"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}}).Raw(); err != nil {
		t.Fatal(err)
	}
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "view"}, {Key: "map", Value: mapFn}, {Key: "reduce", Value: reduceFn}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	wantCode(t, err, 166, "CommandNotSupportedOnView")
	_, err = run(t, db, bson.D{{Key: "explain", Value: bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: mapFn}, {Key: "reduce", Value: reduceFn}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}}}})
	wantCode(t, err, 238, "NotImplemented")
}

// TestJSTimeBound: an endless loop ends with mongod's interruption after
// the per-call bound, and the server goes on serving meanwhile.
func TestJSTimeBound(t *testing.T) {
	_, c := jsFixture(t, func(cfg *server.Config) { cfg.JSTimeout = 300 * time.Millisecond })
	var wg sync.WaitGroup
	wg.Add(1)
	var loopErr error
	start := time.Now()
	go func() {
		defer wg.Done()
		_, loopErr = c.Find(ctx, bson.D{{Key: "$where", Value: "while (true) {}"}})
	}()
	time.Sleep(50 * time.Millisecond)
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Errorf("a command while the loop runs: %d, %v", n, err)
	}
	wg.Wait()
	wantCode(t, loopErr, 11601, "Interrupted")
	if d := time.Since(start); d > testload.Timeout(5*time.Second) {
		t.Errorf("the loop ran %v", d)
	}
	_, err := c.Aggregate(ctx, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$function", Value: bson.D{
		{Key: "body", Value: "function() { for (;;) {} }"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}}}}}})
	wantCode(t, err, 11601, "Interrupted")
	if got := whereIDs(t, c, bson.D{{Key: "$where", Value: "this._id == 1"}}); got != `{"ids":[1]}` {
		t.Errorf("after the timeouts: %s", got)
	}
}

// TestJSMaxTimeMS: JavaScript that loops or sleeps ($where, mapReduce's
// map, $function in a pipeline and in $expr, $accumulator) stops at the
// command's maxTimeMS with MaxTimeMSExpired, long before the call's own
// bound.
func TestJSMaxTimeMS(t *testing.T) {
	db, _ := jsFixture(t)
	start := time.Now()
	_, err := run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$where", Value: "sleep(30000); return true"}}}, {Key: "maxTimeMS", Value: 200}})
	wantCode(t, err, 50, "MaxTimeMSExpired")
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { for (;;) {} }"},
		{Key: "reduce", Value: "function(k, v) { return 1 }"}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}, {Key: "maxTimeMS", Value: 200}})
	wantCode(t, err, 50, "MaxTimeMSExpired")
	loop := bson.D{{Key: "$function", Value: bson.D{{Key: "body", Value: "function() { for (;;) {} }"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}
	_, err = run(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$project", Value: bson.D{{Key: "v", Value: loop}}}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 200}})
	wantCode(t, err, 50, "MaxTimeMSExpired")
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "$expr", Value: loop}}}, {Key: "maxTimeMS", Value: 200}})
	wantCode(t, err, 50, "MaxTimeMSExpired")
	acc := bson.D{{Key: "$accumulator", Value: bson.D{{Key: "init", Value: "function() { return 0 }"}, {Key: "accumulate", Value: "function(s) { for (;;) {} }"},
		{Key: "accumulateArgs", Value: bson.A{}}, {Key: "merge", Value: "function(a, b) { return a }"}, {Key: "lang", Value: "js"}}}}
	_, err = run(t, db, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "r", Value: acc}}}}}},
		{Key: "cursor", Value: bson.D{}}, {Key: "maxTimeMS", Value: 200}})
	wantCode(t, err, 50, "MaxTimeMSExpired")
	if d := time.Since(start); d > testload.Timeout(10*time.Second) {
		t.Errorf("took %v", d)
	}
	// getMores run their JavaScript under their own context, not the
	// first batch's (which ended with its command)
	c := db.Collection("c")
	tctx, cancel := context.WithTimeout(ctx, testload.Timeout(10*time.Second)) // the driver sends maxTimeMS
	defer cancel()
	cur, err := c.Find(tctx, bson.D{{Key: "$where", Value: "sleep(5); return true"}}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for cur.Next(tctx) {
		n++
	}
	if cur.Err() != nil || n != 3 {
		t.Errorf("find over getMores: %d, %v", n, cur.Err())
	}
	fn := bson.D{{Key: "$function", Value: bson.D{{Key: "body", Value: "function(n) { sleep(5); return n * 2 }"}, {Key: "args", Value: bson.A{"$n"}}, {Key: "lang", Value: "js"}}}}
	cur, err = c.Aggregate(tctx, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "v", Value: fn}}}}}, options.Aggregate().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for cur.Next(tctx) {
		n++
	}
	if cur.Err() != nil || n != 3 {
		t.Errorf("aggregate over getMores: %d, %v", n, cur.Err())
	}
}

// TestJSTimeParameter: the bound is mongod's parameter, changed at run
// time by setParameter.
func TestJSTimeParameter(t *testing.T) {
	db, c := jsFixture(t)
	admin := db.Client().Database("admin")
	got := mustRun(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "internalQueryJavaScriptFnTimeoutMillis", Value: 1}})
	if num(got["internalQueryJavaScriptFnTimeoutMillis"]) != 60000 {
		t.Errorf("default: %v", got)
	}
	mustRun(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "internalQueryJavaScriptFnTimeoutMillis", Value: 100}})
	start := time.Now()
	_, err := c.Find(ctx, bson.D{{Key: "$where", Value: "for (;;) {}"}})
	wantCode(t, err, 11601, "Interrupted")
	if d := time.Since(start); d > testload.Timeout(5*time.Second) {
		t.Errorf("the loop ran %v", d)
	}
}

// TestJSMemoryBound: a call that keeps growing the heap is stopped with
// mongod's out-of-memory error, and a result past the BSON limit fails.
func TestJSMemoryBound(t *testing.T) {
	db, c := jsFixture(t, func(cfg *server.Config) { cfg.JSHeapLimit = 64 << 20 })
	_, err := c.Find(ctx, bson.D{{Key: "$where", Value: "var a = []; for (;;) { a.push('x'.repeat(4096) + a.length) }"}})
	wantCode(t, err, 139, "JSInterpreterFailure")
	if ce := err.(mongo.CommandError); ce.Message != "Out of memory" {
		t.Errorf("message %q", ce.Message)
	}
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { emit(1, 'x'.repeat(15 << 20) + 'y'.repeat(2 << 20)) }"},
		{Key: "reduce", Value: "function(k, v) { return 1 }"}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	wantCode(t, err, 139, "JSInterpreterFailure")
	// inline results past the reply's limit
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { emit(this._id, 'x'.repeat(6 << 20)) }"},
		{Key: "reduce", Value: "function(k, v) { return v[0] }"}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	wantCode(t, err, 10334, "BSONObjectTooLarge")
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Errorf("after: %d, %v", n, err)
	}
}

func TestJSNoScripting(t *testing.T) {
	db, c := jsFixture(t, func(cfg *server.Config) { cfg.NoScripting = true })
	if bi, err := run(t, db, bson.D{{Key: "buildInfo", Value: 1}}); err != nil || bi["javascriptEngine"] != "none" {
		t.Errorf("buildInfo with scripting off: %v %v", bi["javascriptEngine"], err)
	}
	_, err := c.Find(ctx, bson.D{{Key: "$where", Value: "true"}})
	wantCode(t, err, 6108304, "Location6108304")
	_, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "v", Value: bson.D{{Key: "$function", Value: bson.D{
		{Key: "body", Value: "function() { return 1 }"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}}}}}})
	wantCode(t, err, 31264, "Location31264")
	_, err = c.Aggregate(ctx, mongo.Pipeline{{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "r", Value: bson.D{{Key: "$accumulator", Value: bson.D{
		{Key: "init", Value: "function() { return 0 }"}, {Key: "accumulate", Value: "function(s) { return s }"}, {Key: "accumulateArgs", Value: bson.A{}},
		{Key: "merge", Value: "function(a, b) { return a }"}, {Key: "lang", Value: "js"}}}}}}}}})
	wantCode(t, err, 31264, "Location31264")
	_, err = run(t, db, bson.D{{Key: "mapReduce", Value: "c"}, {Key: "map", Value: "function() { emit(1, 1) }"},
		{Key: "reduce", Value: "function(k, v) { return 1 }"}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	wantCode(t, err, 31246, "Location31246")
	// over no documents nothing runs, so nothing is refused (as on mongod)
	out, err := run(t, db, bson.D{{Key: "mapReduce", Value: "empty"}, {Key: "map", Value: "function() { emit(1, 1) }"},
		{Key: "reduce", Value: "function(k, v) { return 1 }"}, {Key: "out", Value: bson.D{{Key: "inline", Value: 1}}}})
	if err != nil || js(bson.M{"r": out["results"]}) != `{"r":[]}` {
		t.Errorf("over no documents: %v, %v", out, err)
	}
	// a let's $function too
	_, err = run(t, db, bson.D{{Key: "find", Value: "c"}, {Key: "let", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$function", Value: bson.D{
		{Key: "body", Value: "function() { return 1 }"}, {Key: "args", Value: bson.A{}}, {Key: "lang", Value: "js"}}}}}}}})
	wantCode(t, err, 31264, "Location31264")
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Errorf("other commands: %d, %v", n, err)
	}
}

// TestJSScopesByUser: with --auth, a global one user's JavaScript sets is
// not seen by another user's, as mongod pools its scopes by user. (Whether
// a user's next call sees it depends on which pooled runtime it gets.)
func TestJSScopesByUser(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	for _, u := range []string{"ann", "bob"} {
		mustRun(t, root.Database("admin"), bson.D{{Key: "createUser", Value: u}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readWriteAnyDatabase"}}})
	}
	if _, err := root.Database("jsdb").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	probe := func(user, code string) string {
		c := ts.authClient(user, "pw", "admin", "").Database("jsdb").Collection("c")
		var out bson.D
		err := c.FindOne(ctx, bson.D{{Key: "$where", Value: code}}).Decode(&out)
		if errors.Is(err, mongo.ErrNoDocuments) {
			return "none"
		}
		if err != nil {
			t.Fatal(err)
		}
		return "one"
	}
	if got := probe("ann", "secret = 'ann'; return true"); got != "one" {
		t.Fatalf("ann: %s", got)
	}
	if got := probe("bob", "return typeof secret == 'string'"); got != "none" {
		t.Errorf("bob sees ann's global")
	}
}
