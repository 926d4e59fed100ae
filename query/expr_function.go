package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $function: {body: <code or string>, args: <array expression>, lang:
// "js"} runs body over the evaluated args in the env's JavaScript engine
// (js). The body compiles once, with the expression; the engine is
// looked up when it runs, so that --noscripting refuses at evaluation as
// mongod does (31264).

type functionExpr struct {
	fn   *js.Func
	args Expr
	// objToThis binds the single argument to this and obj ($where
	// desugared, mongod's _internalSetObjToThis).
	objToThis bool
}

func compileFunction(name string, arg bsoncore.Value, s *compileScope) (Expr, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location31260, "%s requires an object as an argument, found: %s", name, value.TypeName(arg.Type))
	}
	body, ok := value.LookupField(arg.Data, "body")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location31261, "The body function must be specified.")
	}
	code, err := constantCode(body, s, func() error {
		return mongoerr.New(mongoerr.Location31432, "The body function must be a constant expression")
	}, func() error {
		return mongoerr.New(mongoerr.Location31262, "The body function must evaluate to type string or code")
	})
	if err != nil {
		return nil, err
	}
	argsV, ok := value.LookupField(arg.Data, "args")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location31263, "The args field must be specified.")
	}
	args, err := compileExpr(argsV, s)
	if err != nil {
		return nil, err
	}
	lang, ok := value.LookupField(arg.Data, "lang")
	if !ok {
		return nil, mongoerr.New(mongoerr.Location31418, "The lang field must be specified.")
	}
	if lang.Type != bsoncore.TypeString || lang.StringValue() != "js" {
		return nil, mongoerr.New(mongoerr.Location31419, "Currently the only supported language specifier is 'js'.")
	}
	fn, err := js.Compile(code)
	if err != nil {
		return nil, err
	}
	toThis, _ := value.LookupField(arg.Data, "_internalSetObjToThis")
	return &functionExpr{fn: fn, args: args, objToThis: toThis.Type != 0 && value.Truthy(toThis)}, nil
}

// constantCode is the source of a function given as a constant string
// or code (an expression that is not constant, or a value of another
// type, fails with notConst or badType).
func constantCode(v bsoncore.Value, s *compileScope, notConst, badType func() error) (string, error) {
	x, err := compileExpr(v, s)
	if err != nil {
		return "", err
	}
	lit, ok := x.(literalExpr)
	if !ok {
		return "", notConst()
	}
	switch lit.v.Type {
	case bsoncore.TypeString:
		return lit.v.StringValue(), nil
	case bsoncore.TypeJavaScript:
		return lit.v.JavaScript(), nil
	}
	return "", badType()
}

func (f *functionExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	eng := c.env.scripts()
	if eng == nil {
		return bsoncore.Value{}, scriptingDisabled()
	}
	argsV, err := f.args.eval(c)
	if err != nil {
		return bsoncore.Value{}, err
	}
	if argsV.Type != bsoncore.TypeArray {
		return bsoncore.Value{}, mongoerr.New(mongoerr.Location31266, "The args field must be of type array")
	}
	args := value.ArrayValues(argsV.Data)
	if f.objToThis {
		if len(args) != 1 {
			return bsoncore.Value{}, mongoerr.New(mongoerr.Location31422, "field path $$CURRENT must be the only element in args")
		}
		return eng.Call(c.context(), c.env.jsScope(), f.fn, args[0])
	}
	return eng.Call(c.context(), c.env.jsScope(), f.fn, bsoncore.Value{}, args...)
}

// scriptingDisabled is $function's and $accumulator's answer under
// --noscripting.
func scriptingDisabled() error {
	return mongoerr.New(mongoerr.Location31264, "Cannot run server-side javascript without the javascript engine enabled")
}
