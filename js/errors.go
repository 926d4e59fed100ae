package js

import (
	"errors"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// What user code throws reaches the client as mongod's scope reports it:
// JSInterpreterFailure, with "<name>: <message> :\n<stack>" for an Error
// object, "uncaught exception: <value>" for anything else thrown. A call
// the watch stops at its deadline is Interrupted, one it stops for its heap is "Out of
// memory" (mongod's answers for its scope's kill and its heap limit).

type interruption string

func (i interruption) Error() string { return string(i) }

// contextStop is the interrupt of a call whose command's context ended
// (maxTimeMS, killOp, a client gone): the command's own error.
type contextStop struct{ err error }

var (
	errTimeout     = interruption("JavaScript execution interrupted")
	errOutOfMemory = interruption("Out of memory")
	errNotFunction = errors.New("the code is not a function")
	errEmitArgs    = mongoerr.New(mongoerr.Location31220, "emit takes 2 args")
)

// mapError turns an error of goja into mongod's.
func mapError(err error) error {
	var me *mongoerr.Error
	if errors.As(err, &me) { // thrown by a native: emit's own limits
		return me
	}
	var intr *goja.InterruptedError
	if errors.As(err, &intr) {
		if stop, ok := intr.Value().(contextStop); ok {
			return mongoerr.Interruption(stop.err)
		}
		switch intr.Value() {
		case errTimeout:
			return mongoerr.New(mongoerr.Interrupted, "%s", errTimeout)
		case errOutOfMemory:
			return mongoerr.New(mongoerr.JSInterpreterFailure, "%s", errOutOfMemory)
		}
		return mongoerr.New(mongoerr.Interrupted, "JavaScript execution interrupted")
	}
	var so *goja.StackOverflowError
	if errors.As(err, &so) {
		return mongoerr.New(mongoerr.JSInterpreterFailure, "InternalError: too much recursion")
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return mongoerr.New(mongoerr.JSInterpreterFailure, "%s", exceptionMsg(ex))
	}
	var syn *goja.CompilerSyntaxError
	if errors.As(err, &syn) {
		return mongoerr.New(mongoerr.JSInterpreterFailure, "SyntaxError: %s", syn.Message)
	}
	if errors.Is(err, errNotFunction) {
		return mongoerr.New(mongoerr.JSInterpreterFailure, "%s", err)
	}
	return mongoerr.New(mongoerr.JSInterpreterFailure, "%s", err)
}

func exceptionMsg(ex *goja.Exception) string {
	v := ex.Value()
	o, ok := v.(*goja.Object)
	if !ok || o.ClassName() != "Error" {
		return "uncaught exception: " + valueString(v)
	}
	return v.String() + " :\n" + strings.TrimSuffix(stack(ex.Stack()), "\n")
}

// valueString is a thrown value as the shell prints it.
func valueString(v goja.Value) string {
	if v == nil {
		return "undefined"
	}
	if o, ok := v.(*goja.Object); ok && o.ClassName() == "Object" {
		if b, err := o.MarshalJSON(); err == nil {
			return string(b)
		}
	}
	return v.String()
}

// stack writes frames as SpiderMonkey does: name@file:line:column.
func stack(frames []goja.StackFrame) string {
	var b strings.Builder
	for _, f := range frames {
		p := f.Position()
		if p.Line == 0 || f.SrcName() == preludeName {
			continue // a native, or the prelude's shell types
		}
		name := f.FuncName()
		if name == "" || name == "<anonymous>" {
			name = ""
		}
		b.WriteString(name)
		b.WriteString("@:")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(p.Column))
		b.WriteByte('\n')
	}
	return b.String()
}
