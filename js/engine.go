package js

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// Config is what a server sets about its JavaScript.
type Config struct {
	// Disabled is mongod's --noscripting: every JavaScript operator and
	// mapReduce is refused.
	Disabled bool
	// Timeout bounds one call (mongod's
	// internalQueryJavaScriptFnTimeoutMillis); 0 is DefaultTimeout.
	Timeout time.Duration
	// HeapLimit bounds the heap one call may grow by, in bytes (mongod's
	// internalQueryJavaScriptHeapSizeLimitMB); 0 is DefaultHeapLimit.
	HeapLimit int64
	// MaxValueBytes bounds a value leaving the engine (a result, an
	// accumulator's state, an emitted pair); 0 is DefaultMaxValueBytes.
	MaxValueBytes int
}

// The defaults are mongod's.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultHeapLimit     = 100 << 20
	DefaultMaxValueBytes = 16*1024*1024 + 16*1024 // BSONObjMaxInternalSize
)

// Engine runs JavaScript for one server: pools of runtimes, the limits
// and the watch that keeps them (watch.go). It is safe for concurrent use.
//
// Runtimes are pooled by scope, as mongod pools its scopes by database and
// user: what a call leaves in a runtime (a global, a changed prototype) is
// seen only by later calls of the same scope, never by another user's.
type Engine struct {
	cfg   Config
	mu    sync.Mutex
	pools map[string]*sync.Pool
	watch watch
	// timeout and heapLimit are cfg's, changed at run time by
	// setParameter (SetTimeout, SetHeapLimit).
	timeout, heapLimit atomic.Int64
}

// New is an Engine with cfg's limits.
func New(cfg Config) *Engine {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HeapLimit <= 0 {
		cfg.HeapLimit = DefaultHeapLimit
	}
	if cfg.MaxValueBytes <= 0 {
		cfg.MaxValueBytes = DefaultMaxValueBytes
	}
	e := &Engine{cfg: cfg}
	e.timeout.Store(int64(cfg.Timeout))
	e.heapLimit.Store(cfg.HeapLimit)
	e.pools = map[string]*sync.Pool{}
	return e
}

// maxPools bounds the scopes kept: past it the pools start over (their
// runtimes are garbage once no call holds them).
const maxPools = 1024

// pool is the pool of runtimes of scope.
func (e *Engine) pool(scope string) *sync.Pool {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.pools[scope]
	if !ok {
		if len(e.pools) >= maxPools {
			clear(e.pools)
		}
		p = &sync.Pool{New: func() any { return newRuntime() }}
		e.pools[scope] = p
	}
	return p
}

// Timeout is the bound of one call.
func (e *Engine) Timeout() time.Duration { return time.Duration(e.timeout.Load()) }

// SetTimeout changes the bound of the calls that start from now on.
func (e *Engine) SetTimeout(d time.Duration) { e.timeout.Store(int64(d)) }

// HeapLimit is the heap growth one call may make, in bytes.
func (e *Engine) HeapLimit() int64 { return e.heapLimit.Load() }

// SetHeapLimit changes the heap bound of the calls that start from now on.
func (e *Engine) SetHeapLimit(n int64) { e.heapLimit.Store(n) }

var defaultEngine = New(Config{})

// Default is the engine of callers that have no server: enabled, with
// mongod's limits.
func Default() *Engine { return defaultEngine }

// Enabled reports whether scripting is on (no --noscripting).
func (e *Engine) Enabled() bool { return e != nil && !e.cfg.Disabled }

// Session holds one runtime for a run of calls that share globals (a
// mapReduce with its scope and emit). Release returns the runtime.
type Session struct {
	e    *Engine
	pool *sync.Pool
	rt   *runtime
	// ctx is the command's context (nil: none): a call stops when it
	// ends, as mongod's scope checks its operation for interrupts.
	ctx context.Context
}

// SetContext makes the session's calls stop when ctx ends.
func (s *Session) SetContext(ctx context.Context) { s.ctx = ctx }

// Acquire takes a runtime from the pool of scope (a database and a user:
// see Engine).
func (e *Engine) Acquire(scope string) *Session {
	p := e.pool(scope)
	return &Session{e: e, pool: p, rt: p.Get().(*runtime)}
}

// Release gives the runtime back, with the globals the session set left
// as they are but emit unset.
func (s *Session) Release() {
	s.rt.emit = nil
	clear(s.rt.origins)
	s.pool.Put(s.rt)
	s.rt = nil
}

// SetGlobal binds name to v (converted from BSON) for the session's calls.
func (s *Session) SetGlobal(name string, v bsoncore.Value) error {
	jv, err := s.rt.toJS(v)
	if err != nil {
		return err
	}
	return s.rt.vm.Set(name, jv)
}

// SetGlobalDoc binds name to a document.
func (s *Session) SetGlobalDoc(name string, doc bsoncore.Document) error {
	return s.SetGlobal(name, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}

// OnEmit sets what emit(key, value) does during the session's calls.
func (s *Session) OnEmit(fn func(key, val bsoncore.Value) error) {
	s.rt.emit = func(k, v goja.Value) error {
		kb, err := s.rt.fromJS(k, s.e.cfg.MaxValueBytes)
		if err != nil {
			return err
		}
		vb, err := s.rt.fromJS(v, s.e.cfg.MaxValueBytes)
		if err != nil {
			return err
		}
		return fn(kb, vb)
	}
}

// Call runs f with this bound to this (a document; Type 0: the global
// object) and args, and converts what it returns to BSON (undefined is
// null). When this is a document it is also the global obj, as mongod
// binds it for $where.
func (s *Session) Call(f *Func, this bsoncore.Value, args ...bsoncore.Value) (bsoncore.Value, error) {
	rt := s.rt
	var result bsoncore.Value
	err := s.e.bounded(rt, s.ctx, func() error {
		fn, err := rt.function(f)
		if err != nil {
			return err
		}
		thisV := goja.Value(goja.Undefined())
		if this.Type != 0 {
			if thisV, err = rt.toJS(this); err != nil {
				return err
			}
			if err := rt.vm.Set("obj", thisV); err != nil {
				return err
			}
		}
		jsArgs := make([]goja.Value, len(args))
		for i, a := range args {
			if jsArgs[i], err = rt.toJS(a); err != nil {
				return err
			}
		}
		out, err := fn(thisV, jsArgs...)
		if err != nil {
			return err
		}
		// converting runs user code too (getters, proxies): in the bounds
		result, err = rt.fromJS(out, s.e.cfg.MaxValueBytes)
		return err
	})
	return result, err
}

// CallBool is Call for a predicate ($where): the result's truthiness, as
// JavaScript has it.
func (s *Session) CallBool(f *Func, this bsoncore.Value) (bool, error) {
	rt := s.rt
	var result bool
	err := s.e.bounded(rt, s.ctx, func() error {
		fn, err := rt.function(f)
		if err != nil {
			return err
		}
		thisV, err := rt.toJS(this)
		if err != nil {
			return err
		}
		if err := rt.vm.Set("obj", thisV); err != nil {
			return err
		}
		out, err := fn(thisV)
		if err != nil {
			return err
		}
		result = out.ToBoolean()
		return nil
	})
	return result, err
}

// Call runs one call in a runtime of scope's pool (see Session.Call); it
// stops when ctx (if not nil) ends.
func (e *Engine) Call(ctx context.Context, scope string, f *Func, this bsoncore.Value, args ...bsoncore.Value) (bsoncore.Value, error) {
	s := e.Acquire(scope)
	s.ctx = ctx
	defer s.Release()
	return s.Call(f, this, args...)
}

// CallBool runs one predicate in a runtime of scope's pool; it stops
// when ctx (if not nil) ends.
func (e *Engine) CallBool(ctx context.Context, scope string, f *Func, this bsoncore.Value) (bool, error) {
	s := e.Acquire(scope)
	s.ctx = ctx
	defer s.Release()
	return s.CallBool(f, this)
}

// bounded runs fn in rt under the time and heap bounds, and maps what
// it throws to mongod's errors. What goja panics with when Go code calls
// into JavaScript outside a function call (a proxy's trap while
// converting) is an error of the call too.
func (e *Engine) bounded(rt *runtime, ctx context.Context, fn func() error) (err error) {
	if e.cfg.Disabled {
		return mongoerr.New(mongoerr.JSInterpreterFailure, "%s", disabledMsg)
	}
	clear(rt.origins) // a call's objects are its own
	g := newCallGuard(rt.vm)
	rt.stopped = g.stopped
	stop := e.watch.start(g, ctx, e.Timeout(), e.HeapLimit())
	defer func() {
		stop()
		g.end()
		if r := recover(); r != nil {
			if rerr, ok := r.(error); ok {
				err = mapError(rerr)
			} else {
				err = mongoerr.New(mongoerr.JSInterpreterFailure, "uncaught exception: %v", r)
			}
		}
	}()
	if err := fn(); err != nil {
		return mapError(err)
	}
	return nil
}

// callGuard lets the watch interrupt a call only while it runs: an interrupt arriving after the call ended would stop
// the runtime's next call, from another command.
type callGuard struct {
	mu   sync.Mutex
	vm   *goja.Runtime
	done bool
	// stopped is closed when the call is interrupted, to wake a native
	// that waits (sleep), which goja's interrupt does not reach.
	stopped chan struct{}
}

func newCallGuard(vm *goja.Runtime) *callGuard {
	return &callGuard{vm: vm, stopped: make(chan struct{})}
}

func (g *callGuard) interrupt(why any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.vm.Interrupt(why)
		g.done = true
		close(g.stopped)
	}
}

// end marks the call over and clears an interrupt that came too late to
// stop it.
func (g *callGuard) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.done {
		g.done = true
		close(g.stopped)
	}
	g.vm.ClearInterrupt()
}

// disabledMsg is what a disabled engine answers if a call reaches it
// (the query layer refuses sooner, with each operator's own error).
const disabledMsg = "JavaScript execution is disabled"
