package js

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

func doc(t testing.TB, ext string) bsoncore.Value {
	t.Helper()
	var d bson.D
	if err := bson.UnmarshalExtJSON([]byte(ext), false, &d); err != nil {
		t.Fatal(err)
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: raw}
}

func call(t *testing.T, e *Engine, code string, this bsoncore.Value, args ...bsoncore.Value) (string, error) {
	t.Helper()
	f, err := Compile(code)
	if err != nil {
		return "", err
	}
	v, err := e.Call(context.Background(), "test", f, this, args...)
	if err != nil {
		return "", err
	}
	return value.Format(v), nil
}

func TestRoundTrip(t *testing.T) {
	in := doc(t, `{"d": 1.5, "i": 1, "l": {"$numberLong": "9007199254740993"}, "dec": {"$numberDecimal": "1.10"},
		"s": "x", "o": {"$oid": "5f0000000000000000000001"}, "dt": {"$date": "2020-01-02T03:04:05.006Z"},
		"b": {"$binary": {"base64": "AQI=", "subType": "04"}}, "ts": {"$timestamp": {"t": 5, "i": 6}},
		"re": {"$regularExpression": {"pattern": "a.c", "options": "i"}}, "min": {"$minKey": 1}, "max": {"$maxKey": 1},
		"n": null, "u": {"$undefined": true}, "arr": [1, {"x": true}], "code": {"$code": "function(){}"}}`)
	got, err := call(t, New(Config{}), "function(d) { return d }", bsoncore.Value{}, in)
	if err != nil {
		t.Fatal(err)
	}
	want := value.Format(doc(t, `{"d": 1.5, "i": 1, "l": {"$numberLong": "9007199254740993"}, "dec": {"$numberDecimal": "1.10"},
		"s": "x", "o": {"$oid": "5f0000000000000000000001"}, "dt": {"$date": "2020-01-02T03:04:05.006Z"},
		"b": {"$binary": {"base64": "AQI=", "subType": "04"}}, "ts": {"$timestamp": {"t": 5, "i": 6}},
		"re": {"$regularExpression": {"pattern": "a.c", "options": "i"}}, "min": {"$minKey": 1}, "max": {"$maxKey": 1},
		"n": null, "u": {"$undefined": true}, "arr": [1, {"x": true}], "code": {"$code": "function(){}"}}`))
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// an int32 stays one while its value is an int32, as mongod's writer
	// keeps a field's type; a new or changed number is a double
	got, err = call(t, New(Config{}), "function(d) { d.b = d.b + 0.5; d.c = 2; d.arr.push(3); d.arr[0] = 7; return d }", bsoncore.Value{},
		doc(t, `{"a": 1, "b": 1, "arr": [1, 2]}`))
	if want := value.Format(doc(t, `{"a": 1, "b": 1.5, "arr": [7, 2, 3.0], "c": 2.0}`)); err != nil || got != want {
		t.Errorf("int32 fields: got %s, %v; want %s", got, err, want)
	}
}

func TestShellTypes(t *testing.T) {
	e := New(Config{})
	for _, c := range []struct{ code, want string }{
		{`return NumberLong(5).toString() + " " + NumberInt(3).toString() + " " + ObjectId("5f0000000000000000000001").toString()`, `"NumberLong(5) NumberInt(3) ObjectId(\"5f0000000000000000000001\")"`},
		{`return [NumberLong("12"), NumberInt(7), NumberDecimal("2.50"), new Timestamp(1, 2), MinKey(), new Date(0)]`, value.Format(bsoncore.Document(doc(t, `{"a": [{"$numberLong": "12"}, 7, {"$numberDecimal": "2.50"}, {"$timestamp": {"t": 1, "i": 2}}, {"$minKey": 1}, {"$date": 0}]}`).Data).Lookup("a"))},
		{`return NumberLong(5) + 1`, "6.0"},
		{`return this.x`, "null"},
		{`var u = UUID(); return [u.subtype(), u.base64().length, UUID('00112233-4455-6677-8899-aabbccddeeff').base64()]`, `[ 4.0, 24.0, "ABEiM0RVZneImaq7zN3u/w==" ]`},
		{`return`, "null"},
	} {
		got, err := call(t, e, c.code, bsoncore.Value{})
		if err != nil || got != c.want {
			t.Errorf("%s: got %s, %v; want %s", c.code, got, err, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	e := New(Config{})
	for _, c := range []struct {
		code string
		want mongoerr.Code
		msg  string
	}{
		{`throw "boom"`, mongoerr.JSInterpreterFailure, "uncaught exception: boom"},
		{`throw {a: 1}`, mongoerr.JSInterpreterFailure, `uncaught exception: {"a":1}`},
		{`function() { throw new Error("bad") }`, mongoerr.JSInterpreterFailure, "Error: bad :\n@:1:21"},
		{`function() { return nope }`, mongoerr.JSInterpreterFailure, "ReferenceError: nope is not defined"},
		{`function( {`, mongoerr.JSInterpreterFailure, "SyntaxError: "},
		{`function f() { return f() }`, mongoerr.JSInterpreterFailure, "InternalError: too much recursion"},
	} {
		_, err := call(t, e, c.code, bsoncore.Value{})
		me := mongoerr.As(err)
		if err == nil || me.Code != c.want || !strings.HasPrefix(me.Msg, c.msg) {
			t.Errorf("%s: got %v (%v), want %d %q", c.code, err, me.Code, c.want, c.msg)
		}
	}
}

func TestTimeBound(t *testing.T) {
	e := New(Config{Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := call(t, e, `while (true) {}`, bsoncore.Value{})
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.Interrupted || me.Msg != "JavaScript execution interrupted" {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > testload.Timeout(2*time.Second) {
		t.Errorf("took %v", d)
	}
	// the runtime goes back to the pool usable
	if got, err := call(t, e, `1 + 1`, bsoncore.Value{}); err != nil || got != "2.0" {
		t.Errorf("after a timeout: %s, %v", got, err)
	}
}

// TestConversionRunsUserCode: a getter or a proxy runs while the result
// converts, under the same bounds and error mapping.
func TestConversionRunsUserCode(t *testing.T) {
	e := New(Config{Timeout: 50 * time.Millisecond})
	for code, want := range map[string]mongoerr.Code{
		`return {get x() { for (;;) {} }}`:                             mongoerr.Interrupted,
		`return new Proxy({}, {ownKeys: function() { throw "trap" }})`: mongoerr.JSInterpreterFailure,
		`return {get x() { throw new Error("getter") }}`:               mongoerr.JSInterpreterFailure,
		`return new Proxy({a: 1}, {get: function() { for (;;) {} }})`:  mongoerr.Interrupted,
	} {
		got, err := call(t, e, code, bsoncore.Value{})
		if err == nil {
			t.Errorf("%s: got %s, want error %d", code, got, want)
		} else if me := mongoerr.As(err); me.Code != want {
			t.Errorf("%s: got %v, want %d", code, err, want)
		}
	}
	if got, err := call(t, e, `return {get x() { return 1 }}`, bsoncore.Value{}); err != nil || got != "{ x: 1.0 }" {
		t.Errorf("a getter: %s, %v", got, err)
	}
}

// TestSleep: sleep waits, and the time bound ends a sleeping call.
func TestSleep(t *testing.T) {
	e := New(Config{Timeout: 100 * time.Millisecond})
	start := time.Now()
	if got, err := call(t, e, `sleep(20); return 1`, bsoncore.Value{}); err != nil || got != "1.0" {
		t.Fatalf("sleep: %s, %v", got, err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("slept %v", d)
	}
	start = time.Now()
	_, err := call(t, e, `sleep(60000); return 1`, bsoncore.Value{})
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.Interrupted {
		t.Fatalf("a long sleep: %v", err)
	}
	if d := time.Since(start); d > testload.Timeout(2*time.Second) {
		t.Errorf("the sleep lasted %v", d)
	}
}

func TestMemoryBound(t *testing.T) {
	e := New(Config{HeapLimit: 32 << 20, MaxValueBytes: 1 << 20})
	_, err := call(t, e, `var a = []; while (true) { a.push("x".repeat(1000) + a.length) }`, bsoncore.Value{})
	if me := mongoerr.As(err); err == nil || me.Code != mongoerr.JSInterpreterFailure || me.Msg != "Out of memory" {
		t.Fatalf("growing an array: got %v", err)
	}
	_, err = call(t, e, `return "x".repeat(2 << 20)`, bsoncore.Value{})
	if me := mongoerr.As(err); err == nil || !strings.HasPrefix(me.Msg, "Converting from JavaScript to BSON failed: Object size") {
		t.Fatalf("a large result: got %v", err)
	}
	_, err = call(t, e, `return "x".repeat(1 << 30)`, bsoncore.Value{})
	if me := mongoerr.As(err); err == nil || !strings.Contains(me.Msg, "Invalid string length") {
		t.Fatalf("a huge repeat: got %v", err)
	}
	_, err = call(t, e, `var o = {}; o.o = o; return o`, bsoncore.Value{})
	if me := mongoerr.As(err); err == nil || !strings.Contains(me.Msg, "depth") {
		t.Fatalf("a cycle: got %v", err)
	}
}

// TestScopes: what a call leaves in its runtime is seen by calls of its
// scope only.
func TestScopes(t *testing.T) {
	e := New(Config{})
	set, _ := Compile("leaked = 'secret'; return 1")
	get, _ := Compile("return typeof leaked")
	if _, err := e.Call(context.Background(), "db\x00alice", set, bsoncore.Value{}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Call(context.Background(), "db\x00bob", get, bsoncore.Value{}); err != nil || value.Format(got) != `"undefined"` {
		t.Errorf("another scope sees %s, %v", value.Format(got), err)
	}
}

func TestWhereSource(t *testing.T) {
	e := New(Config{})
	d := doc(t, `{"a": 2}`)
	for code, want := range map[string]bool{
		"this.a > 1":                        true,
		"obj.a == 3;":                       false,
		"return this.a == 2":                true,
		"function() { return this.a == 2 }": true,
		"var x = this.a; return x > 5":      false,
	} {
		f, err := Compile(code)
		if err != nil {
			t.Fatal(code, err)
		}
		got, err := e.CallBool(context.Background(), "test", f, d)
		if err != nil || got != want {
			t.Errorf("%s: got %v, %v", code, got, err)
		}
	}
}
