package js

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/dop251/goja"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// runtime is one goja runtime with the prelude run and the prototypes the
// converters recognise. A runtime runs one call at a time; the Engine
// pools them.
type runtime struct {
	vm    *goja.Runtime
	proto struct {
		oid, long, int, dec, bin, ts, minKey, maxKey, code, dbptr *goja.Object
	}
	minKey, maxKey *goja.Object
	dateCtor       goja.Value
	regexpCtor     goja.Value
	// funcs are the functions of compiled sources evaluated in this
	// runtime; cleared when it holds too many (each command compiles its
	// own Funcs).
	funcs map[*Func]goja.Callable
	// emit is where the mapReduce emit() of the running call goes.
	emit func(key, val goja.Value) error
	// stopped is closed when the running call is interrupted (sleep
	// wakes on it).
	stopped <-chan struct{}
	// origins are the BSON documents and arrays the running call's
	// objects were made from, which say which numbers were int32.
	origins map[*goja.Object][]byte
}

// maxCallStack bounds recursion: deep recursion ends with a RangeError
// rather than growing the goroutine's stack without limit.
const maxCallStack = 2000

// maxJSString bounds the strings and arrays one native call may build
// from a small input (repeat, padStart, padEnd, fill), which the heap
// watch cannot interrupt: 16M elements.
const maxJSString = 16 << 20

// maxCachedFuncs is how many compiled functions a runtime keeps.
const maxCachedFuncs = 64

func newRuntime() *runtime {
	vm := goja.New()
	vm.SetMaxCallStackSize(maxCallStack)
	rt := &runtime{vm: vm, funcs: map[*Func]goja.Callable{}, origins: map[*goja.Object][]byte{}}
	_ = vm.Set("__maxString", maxJSString)
	_ = vm.Set("__newOid", func() string { return bson.NewObjectID().Hex() })
	_ = vm.Set("__uuid", func(s string) goja.Value {
		if s == "" { // UUID(): a new random (version 4) one, as the shell makes
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
			return rt.binData(4, b)
		}
		b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
		if err != nil || len(b) != 16 {
			panic(vm.NewTypeError("UUID needs a 32 hex digit string"))
		}
		return rt.binData(4, b)
	})
	// sleep(ms), as mongod's scope has it: a wait the call's bounds end.
	_ = vm.Set("sleep", func(ms float64) goja.Value {
		if ms > 0 {
			t := time.NewTimer(time.Duration(ms * float64(time.Millisecond)))
			defer t.Stop()
			select {
			case <-t.C:
			case <-rt.stopped:
			}
		}
		return goja.Undefined()
	})
	_ = vm.Set("emit", func(call goja.FunctionCall) goja.Value {
		if rt.emit == nil {
			panic(vm.NewTypeError("emit is only available in a mapReduce map function"))
		}
		if len(call.Arguments) != 2 {
			panic(vm.NewGoError(errEmitArgs))
		}
		if err := rt.emit(call.Argument(0), call.Argument(1)); err != nil {
			panic(vm.NewGoError(err))
		}
		return goja.Undefined()
	})
	if _, err := vm.RunProgram(prelude()); err != nil {
		panic("js prelude: " + err.Error())
	}
	g := vm.GlobalObject()
	proto := func(name string) *goja.Object { return g.Get(name).ToObject(vm).Get("prototype").ToObject(vm) }
	rt.proto.oid = proto("ObjectId")
	rt.proto.long = proto("NumberLong")
	rt.proto.int = proto("NumberInt")
	rt.proto.dec = proto("NumberDecimal")
	rt.proto.bin = proto("BinData")
	rt.proto.ts = proto("Timestamp")
	rt.proto.minKey = proto("MinKey")
	rt.proto.maxKey = proto("MaxKey")
	rt.proto.code = proto("Code")
	rt.proto.dbptr = proto("DBPointer")
	rt.minKey = g.Get("__minKey").ToObject(vm)
	rt.maxKey = g.Get("__maxKey").ToObject(vm)
	rt.dateCtor = g.Get("Date")
	rt.regexpCtor = g.Get("RegExp")
	return rt
}

// function is f's callable in this runtime, evaluating its source on
// first use.
func (rt *runtime) function(f *Func) (goja.Callable, error) {
	if fn, ok := rt.funcs[f]; ok {
		return fn, nil
	}
	v, err := rt.vm.RunProgram(f.prog)
	if err != nil {
		return nil, err
	}
	fn, ok := goja.AssertFunction(v)
	if !ok {
		return nil, errNotFunction
	}
	if len(rt.funcs) >= maxCachedFuncs {
		clear(rt.funcs)
	}
	rt.funcs[f] = fn
	return fn, nil
}
