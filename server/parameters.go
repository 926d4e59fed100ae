package server

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"
)

// runtimeParameter is a server parameter setParameter can change while
// running: its setter and its current value (in the unit its name says).
type runtimeParameter struct {
	min, max int64 // max 0: none
	get      func(*Server) int64
	set      func(*Server, int64)
	// boolean parameters (quiet) take true or false, held as 1 or 0.
	boolean bool
	// parse, when given, reads a value as mongod reads the parameter
	// (its type, its bounds and its words), in place of min and max.
	parse func(name string, v bsoncore.Value) (int64, error)
	// report, when given, appends the value in the type mongod gives it
	// (getParameter, setParameter's was); else it is a long.
	report func(b *bsoncore.DocumentBuilder, key string, n int64)
}

// runtimeParameters are the parameters setParameter changes, by name.
var runtimeParameters = map[string]runtimeParameter{
	"cursorTimeoutMillis": {min: 1,
		get: func(s *Server) int64 { return s.cursorTimeout.Load() / int64(time.Millisecond) },
		set: func(s *Server, n int64) { s.cursorTimeout.Store(n * int64(time.Millisecond)) }},
	"quiet": {min: 0, max: 1, boolean: true,
		get: func(s *Server) int64 { return b2i(s.quiet.Load()) },
		set: func(s *Server, n int64) { s.quiet.Store(n != 0) }},
	"logLevel": {min: 0, max: 5,
		get: func(s *Server) int64 { return int64(s.logLevel.Load()) },
		set: func(s *Server, n int64) { s.setLogLevel(int(n)) }},
	"minSnapshotHistoryWindowInSeconds": {min: 0,
		get: func(s *Server) int64 { return int64(s.engine.HistoryWindow() / time.Second) },
		set: func(s *Server, n int64) { s.engine.SetHistoryWindow(time.Duration(n) * time.Second) }},
	"changeStreamRetentionSeconds": {min: 1,
		get: func(s *Server) int64 { d, _ := s.engine.Changes().Retention(); return int64(d / time.Second) },
		set: func(s *Server, n int64) {
			l := s.engine.Changes()
			_, bytes := l.Retention()
			l.SetRetention(time.Duration(n)*time.Second, bytes)
		}},
	"changeStreamRetentionMB": {min: 1,
		get: func(s *Server) int64 { _, b := s.engine.Changes().Retention(); return b >> 20 },
		set: func(s *Server, n int64) {
			l := s.engine.Changes()
			d, _ := l.Retention()
			l.SetRetention(d, n<<20)
		}},
	// What an index build's sort holds in memory before it spills
	// (docs/format/index-spill.md); mongod's bounds.
	"maxIndexBuildMemoryUsageMegabytes": {min: 50, report: appendInt32,
		get: func(*Server) int64 { return storage.IndexBuildMemory() >> 20 },
		set: func(_ *Server, n int64) { storage.SetIndexBuildMemory(n << 20) }},
	"transactionLifetimeLimitSeconds": {min: 1,
		get: func(s *Server) int64 { return s.txnLifetime.Load() / int64(time.Second) },
		set: func(s *Server, n int64) { s.txnLifetime.Store(n * int64(time.Second)) }},
	// The bounds of one JavaScript call (docs/design/javascript.md).
	"internalQueryJavaScriptFnTimeoutMillis": {min: 1,
		get: func(s *Server) int64 { return s.js.Timeout().Milliseconds() },
		set: func(s *Server, n int64) { s.js.SetTimeout(time.Duration(n) * time.Millisecond) }},
	"internalQueryJavaScriptHeapSizeLimitMB": {min: 1,
		get: func(s *Server) int64 { return s.js.HeapLimit() >> 20 },
		set: func(s *Server, n int64) { s.js.SetHeapLimit(n << 20) }},
	// The TTL monitor's (ttl.go), as mongod's ttl.idl defines them.
	"ttlMonitorSleepSecs": {min: 1, max: math.MaxInt32, parse: idlIntAbove(0), report: appendInt32,
		get: func(s *Server) int64 { return s.ttl.sleepSecs() },
		set: func(s *Server, n int64) { s.ttl.setSleep(time.Duration(n) * time.Second) }},
	"ttlMonitorEnabled": {min: 0, max: 1, boolean: true, parse: idlBool, report: appendBool,
		get: func(s *Server) int64 { return b2i(!s.ttl.disabled.Load()) },
		set: func(s *Server, n int64) { s.ttl.disabled.Store(n == 0) }},
}

// cmdSetParameter sets the server parameters that can change at run time
// (runtimeParameters). Any other answers as mongod does for a parameter it
// does not know. The reply's "was" is the last one set's former value.
func cmdSetParameter(r *request) (bsoncore.Document, error) {
	els, _ := r.cmd.Elements()
	var was func(*bsoncore.DocumentBuilder)
	for _, el := range els[1:] {
		key := el.Key()
		switch {
		case genericFields[key] || key == "comment":
			continue
		case key == "help":
			return setParameterHelp(), nil
		case key == "logComponentVerbosity":
			return r.setLogComponentVerbosityParameter(el.Value())
		}
		var err error
		if was, err = r.setParameter(key, el.Value()); err != nil {
			return nil, err
		}
	}
	if was == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to set, use help:true to see options ")
	}
	b := bsoncore.NewDocumentBuilder()
	was(b)
	return b.AppendDouble("ok", 1).Build(), nil
}

// setParameter sets one of runtimeParameters; was appends its former
// value.
func (r *request) setParameter(key string, v bsoncore.Value) (was func(*bsoncore.DocumentBuilder), err error) {
	p, ok := runtimeParameters[key]
	switch {
	case key == authMechanismsParameter:
		return nil, mongoerr.New(mongoerr.IllegalOperation, "not allowed to change [%s] at runtime", key)
	case !ok:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "attempted to set unrecognized parameter [%s], use help:true to see options ", key)
	}
	n, err := p.value(key, v)
	if err != nil {
		return nil, err
	}
	if key == "logLevel" && r.c.s.cfg.SetLogLevel == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "logLevel: this server's log level is fixed (it logs through a logger of its host program)")
	}
	old := p.get(r.c.s)
	p.set(r.c.s, n)
	return func(b *bsoncore.DocumentBuilder) { p.append(b, "was", old) }, nil
}

// value reads a value given the parameter.
func (p runtimeParameter) value(key string, v bsoncore.Value) (int64, error) {
	if p.parse != nil {
		return p.parse(key, v)
	}
	n, ok := value.AsInt64(v)
	if p.boolean {
		var b bool
		b, ok = asBool(v)
		n = b2i(b)
	}
	if !ok || n < p.min || (p.max > 0 && n > p.max) {
		return 0, mongoerr.New(mongoerr.BadValue, "%s must be between %d and %d", key, p.min, max(p.max, math.MaxInt32))
	}
	return n, nil
}

// append appends the value n as key.
func (p runtimeParameter) append(b *bsoncore.DocumentBuilder, key string, n int64) {
	if p.report != nil {
		p.report(b, key, n)
		return
	}
	b.AppendInt64(key, n)
}

// reportParameter is getParameter's report of a runtime parameter.
func (s *Server) reportParameter(name string) func(*bsoncore.DocumentBuilder, string) {
	p := runtimeParameters[name]
	return func(b *bsoncore.DocumentBuilder, key string) { p.append(b, key, p.get(s)) }
}

// setLogComponentVerbosityParameter sets logComponentVerbosity; was is
// the former tree.
func (r *request) setLogComponentVerbosityParameter(v bsoncore.Value) (bsoncore.Document, error) {
	if r.c.s.cfg.SetLogLevel == nil {
		return nil, mongoerr.New(mongoerr.NotImplemented, "logComponentVerbosity: this server's log levels are fixed (it logs through a logger of its host program)")
	}
	was := r.c.s.logVerbosity.tree(int(r.c.s.logLevel.Load()))
	if err := r.c.s.setLogComponentVerbosity(v); err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("was", was).AppendDouble("ok", 1).Build(), nil
}

// idlIntAbove reads an int parameter that must be greater than bound, as
// mongod's IDL parameters read one: coerced to an int (coerceInt), then
// checked, each refusal BadValue in mongod's words.
func idlIntAbove(bound int64) func(string, bsoncore.Value) (int64, error) {
	return func(name string, v bsoncore.Value) (int64, error) {
		n, reason := coerceInt(v)
		if reason != "" {
			return 0, mongoerr.New(mongoerr.BadValue, "Failed validating %s: %s", name, reason)
		}
		if n <= bound {
			return 0, mongoerr.New(mongoerr.BadValue, "Invalid value for parameter %s: %d is not greater than %d", name, n, bound)
		}
		return n, nil
	}
}

// coerceInt is mongod's BSONElement::tryCoerce to an int: a number
// rounded toward zero that fits in 32 bits, or a boolean as 0 or 1. The
// reason is why it cannot ("": it can).
func coerceInt(v bsoncore.Value) (n int64, reason string) {
	const outOfBounds = "Out of bounds coercing to integral value"
	switch v.Type {
	case bsoncore.TypeBoolean:
		return b2i(v.Boolean()), ""
	case bsoncore.TypeInt32, bsoncore.TypeInt64:
		n, _ = value.AsInt64(v)
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f := value.ToFloat(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, "Unable to coerce NaN/Inf to integral type"
		}
		if v.Type == bsoncore.TypeDecimal128 {
			f = math.Trunc(f) // a decimal is rounded before it is bounded
		}
		if f > math.MaxInt32 || f < math.MinInt32 {
			return 0, outOfBounds
		}
		n = int64(f)
	default:
		return 0, "Unable to coerce value to integral type"
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, outOfBounds
	}
	return n, ""
}

// idlBool reads a bool parameter as mongod does: any value, by its truth.
func idlBool(_ string, v bsoncore.Value) (int64, error) { return b2i(value.Truthy(v)), nil }

func appendInt32(b *bsoncore.DocumentBuilder, key string, n int64) { b.AppendInt32(key, int32(n)) }

func appendBool(b *bsoncore.DocumentBuilder, key string, n int64) { b.AppendBoolean(key, n != 0) }

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// setParameterHelp is setParameter's answer to help: true.
func setParameterHelp() bsoncore.Document {
	text := "help for: setParameter set administrative option(s)\n{ setParameter:1, <param>:<value> }\nsupported:\n"
	for _, name := range slices.Sorted(maps.Keys(runtimeParameters)) {
		text += "  " + name + "\n"
	}
	text += "  logComponentVerbosity ({verbosity?: <0 to 5>, <component>: {verbosity: <-1 to 5>, <child>: ...}})\n"
	return bsoncore.NewDocumentBuilder().AppendString("help", text).AppendDouble("ok", 1).Build()
}

// SetStartupParameter sets a parameter setParameter changes while
// running, before the server serves (--setParameter name=value).
func (s *Server) SetStartupParameter(name string, n int64) error {
	p, ok := runtimeParameters[name]
	switch {
	case !ok:
		return fmt.Errorf("--setParameter: %s is no parameter DumboDB takes (%s)", name, strings.Join(slices.Sorted(maps.Keys(runtimeParameters)), ", "))
	case n < p.min:
		return fmt.Errorf("--setParameter: %s must be at least %d", name, p.min)
	case p.max > 0 && n > p.max:
		return fmt.Errorf("--setParameter: %s must be at most %d", name, p.max)
	}
	p.set(s, n)
	return nil
}
