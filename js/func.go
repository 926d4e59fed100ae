package js

import (
	"strings"

	"github.com/dop251/goja"
)

// Func is a compiled function: compiled once per command, evaluated
// once in each runtime that calls it (runtime.function).
type Func struct {
	src  string
	prog *goja.Program
}

// Source is the code the function was compiled from.
func (f *Func) Source() string { return f.src }

// Compile compiles code as mongod reads a function's source: a function
// expression ("function (a) {...}", an arrow function) as it is; other
// code as the body of a function taking no arguments, where code that is
// one expression on one line (with no return and at most a trailing
// semicolon) is what the function returns, so that $where: "this.a > 1"
// is a predicate.
func Compile(code string) (*Func, error) {
	return compile(code, functionSource(code))
}

// CompileFold compiles an accumulate function (state, ...args) into a
// function (state, calls) folding it over an array of argument arrays,
// so that a batch of documents costs one call into the engine.
func CompileFold(code string) (*Func, error) {
	src := "(function() { var f = " + functionSource(code) + ";\n" +
		"return function(state, calls) { for (var i = 0; i < calls.length; i++) { state = f.apply(null, [state].concat(calls[i])); } return state; }; })()"
	return compile(code, src)
}

// functionSource is a JavaScript expression whose value is the function
// code stands for.
func functionSource(code string) string {
	t := strings.TrimSpace(code)
	if isFunctionExpr(t) {
		return "(" + t + "\n)"
	}
	if !strings.Contains(t, "\n") && !strings.Contains(t, "return") &&
		(!strings.Contains(t, ";") || strings.Index(t, ";") == len(t)-1) {
		// an expression, unless it does not parse as one (a statement)
		src := "(function() { return " + strings.TrimSuffix(t, ";") + "\n})"
		if _, err := goja.Compile("", src, false); err == nil {
			return src
		}
	}
	return "(function() {\n" + t + "\n})"
}

func compile(code, src string) (*Func, error) {
	prog, err := goja.Compile("", src, false)
	if err != nil {
		return nil, mapError(err)
	}
	return &Func{src: code, prog: prog}, nil
}

// isFunctionExpr reports source that is already a function: it starts
// with the function keyword, or is an arrow function.
func isFunctionExpr(t string) bool {
	for _, kw := range []string{"function", "async function"} {
		if rest, ok := strings.CutPrefix(t, kw); ok && rest != "" && (rest[0] == '(' || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '*') {
			return true
		}
	}
	if i := strings.Index(t, "=>"); i > 0 {
		head := strings.TrimSpace(t[:i])
		return strings.HasPrefix(head, "(") && strings.HasSuffix(head, ")") || isIdent(head)
	}
	return false
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
