package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $accumulator: a $group (or $bucket, $bucketAuto) accumulator written in
// JavaScript. init(...initArgs) makes a group's state on its first
// document; accumulate(state, ...accumulateArgs) folds each document in;
// finalize(state), if given, makes the result. The arguments of several
// documents wait in a batch and are folded in one call (js.CompileFold),
// as mongod does; the state crosses to BSON between batches, so it is
// bounded by the engine's value limit. merge combines partial states, which
// only a sharded or spilled $group needs: DumboDB's $group spills its
// input rather than partial states, so merge is compiled (a syntax error
// is reported) but never called.

type jsAccSpec struct {
	init, fold, merge, finalize *js.Func
	initArgs, accArgs           Expr
}

// jsBatchBytes and jsBatchLen bound the arguments waiting in a batch.
const (
	jsBatchBytes = 16 << 20
	jsBatchLen   = 1024
)

func compileJSAcc(op string, arg bsoncore.Value, s *compileScope, _ *Env) (accFactory, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location4544703, "$accumulator expects an object as an argument; found: %s", value.TypeName(arg.Type))
	}
	spec := &jsAccSpec{}
	var initSrc, accSrc, mergeSrc, finalizeSrc string
	it := value.NewIter(arg.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		var err error
		switch name := string(k); name {
		case "init":
			initSrc, err = accFunction(name, v, s)
		case "accumulate":
			accSrc, err = accFunction(name, v, s)
		case "merge":
			mergeSrc, err = accFunction(name, v, s)
		case "finalize":
			finalizeSrc, err = accFunction(name, v, s)
		case "initArgs":
			spec.initArgs, err = compileExpr(v, s)
		case "accumulateArgs":
			spec.accArgs, err = compileExpr(v, s)
		case "lang":
			switch {
			case v.Type != bsoncore.TypeString:
				err = mongoerr.New(mongoerr.Location4544704, "$accumulator lang must be a string; found: %s", value.TypeName(v.Type))
			case v.StringValue() != "js":
				err = mongoerr.New(mongoerr.Location4544705, "$accumulator only supports lang: 'js'")
			}
		default:
			err = mongoerr.New(mongoerr.Location4544706, "$accumulator got an unexpected field: %s", name)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case initSrc == "":
		return nil, mongoerr.New(mongoerr.Location4544707, "$accumulator missing required argument 'init'")
	case accSrc == "":
		return nil, mongoerr.New(mongoerr.Location4544708, "$accumulator missing required argument 'accumulate'")
	case mergeSrc == "":
		return nil, mongoerr.New(mongoerr.Location4544709, "$accumulator missing required argument 'merge'")
	case spec.accArgs == nil:
		return nil, mongoerr.New(mongoerr.Location4544710, "$accumulator missing required argument 'accumulateArgs'")
	}
	if spec.initArgs == nil {
		spec.initArgs = literalExpr{value.BuildArray(nil)}
	}
	var err error
	if spec.init, err = js.Compile(initSrc); err != nil {
		return nil, err
	}
	if spec.fold, err = js.CompileFold(accSrc); err != nil {
		return nil, err
	}
	if spec.merge, err = js.Compile(mergeSrc); err != nil {
		return nil, err
	}
	if finalizeSrc != "" {
		if spec.finalize, err = js.Compile(finalizeSrc); err != nil {
			return nil, err
		}
	}
	return func() accumulator { return &jsAcc{spec: spec} }, nil
}

// accFunction is the source of one of $accumulator's functions: a
// constant string or code.
func accFunction(name string, v bsoncore.Value, s *compileScope) (string, error) {
	return constantCode(v, s, func() error {
		return mongoerr.New(mongoerr.Location4544701, "$accumulator '%s' must be a constant expression", name)
	}, func() error {
		return mongoerr.New(mongoerr.Location4544702, "$accumulator '%s' must be a String or Code", name)
	})
}

// jsAcc is one group's $accumulator.
type jsAcc struct {
	spec    *jsAccSpec
	eng     *js.Engine
	env     *Env // for the scope and the context of the calls
	state   bsoncore.Value
	started bool
	pending []bsoncore.Value // accumulateArgs of the documents not yet folded
	bytes   int
}

func (a *jsAcc) add(c *evalCtx) (int, error) {
	if !a.started {
		if err := a.start(c); err != nil {
			return 0, err
		}
	}
	args, err := a.spec.accArgs.eval(c)
	if err != nil {
		return 0, err
	}
	if args.Type != bsoncore.TypeArray {
		return 0, mongoerr.New(mongoerr.Location4544712, "$accumulator accumulateArgs must evaluate to an array: %s", value.Format(args))
	}
	if len(args.Data)+len(a.state.Data) > js.DefaultMaxValueBytes {
		return 0, mongoerr.New(mongoerr.Location4545000, "$accumulator arguments exceed max BSON size: %d", len(args.Data)+len(a.state.Data))
	}
	if a.bytes+len(args.Data)+len(a.state.Data) > jsBatchBytes || len(a.pending) >= jsBatchLen {
		if err := a.flush(); err != nil {
			return 0, err
		}
	}
	a.pending = append(a.pending, args)
	a.bytes += len(args.Data)
	return len(args.Data), nil
}

// start makes the group's state with init over initArgs, evaluated on the
// group's first document.
func (a *jsAcc) start(c *evalCtx) error {
	if a.eng = c.env.scripts(); a.eng == nil {
		return scriptingDisabled()
	}
	a.env = c.env
	initArgs, err := a.spec.initArgs.eval(c)
	if err != nil {
		return err
	}
	if initArgs.Type != bsoncore.TypeArray {
		return mongoerr.New(mongoerr.Location4544711, "$accumulator initArgs must evaluate to an array: %s", value.Format(initArgs))
	}
	if a.state, err = a.eng.Call(a.env.context(), a.env.jsScope(), a.spec.init, bsoncore.Value{}, value.ArrayValues(initArgs.Data)...); err != nil {
		return err
	}
	a.started = true
	return nil
}

// flush folds the pending arguments into the state.
func (a *jsAcc) flush() error {
	if len(a.pending) == 0 {
		return nil
	}
	state, err := a.eng.Call(a.env.context(), a.env.jsScope(), a.spec.fold, bsoncore.Value{}, a.state, value.BuildArray(a.pending))
	if err != nil {
		return err
	}
	a.state, a.pending, a.bytes = state, a.pending[:0], 0
	return nil
}

func (a *jsAcc) result() (bsoncore.Value, error) {
	if !a.started { // no document: mongod never makes an empty group
		return value.Null, nil
	}
	if err := a.flush(); err != nil {
		return bsoncore.Value{}, err
	}
	if a.spec.finalize == nil {
		return a.state, nil
	}
	return a.eng.Call(a.env.context(), a.env.jsScope(), a.spec.finalize, bsoncore.Value{}, a.state)
}
