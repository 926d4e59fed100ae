package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// $where: <code or string> is a JavaScript predicate over the whole
// document (this and obj). mongod allows it in a command's own query
// (find, count, distinct, findAndModify, update, delete: the filters
// CompileQueryFilter compiles), nowhere else: not in a $match, an
// $elemMatch, a validator or a partial index. Under --noscripting it is
// refused when parsed, as mongod does (6108304).

type whereExpr struct {
	f   *Filter
	fn  *js.Func
	eng *js.Engine
}

func parseWhere(f *Filter, name string, v bsoncore.Value, _ bool) (docExpr, error) {
	if !f.allowWhere || f.validator {
		return nil, notAllowedHere(name)
	}
	eng := f.env.scripts()
	if eng == nil {
		return nil, mongoerr.New(mongoerr.Location6108304, "no globalScriptEngine in $where parsing")
	}
	var code string
	switch v.Type {
	case bsoncore.TypeString:
		code = v.StringValue()
	case bsoncore.TypeJavaScript:
		code = v.JavaScript()
	default:
		return nil, mongoerr.New(mongoerr.BadValue, "$where got bad type")
	}
	fn, err := js.Compile(code)
	if err != nil {
		return nil, err
	}
	return &whereExpr{f: f, fn: fn, eng: eng}, nil
}

// matchDoc runs the predicate; its error is kept on the Filter (as
// $expr's are) and the document does not match.
func (w *whereExpr) matchDoc(doc []byte) bool {
	if w.f.exprErr != nil {
		return false
	}
	ok, err := w.eng.CallBool(w.f.env.context(), w.f.env.jsScope(), w.fn, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
	if err != nil {
		w.f.exprErr = err
		return false
	}
	return ok
}

// CompileQueryFilter compiles the query of a find, count, distinct,
// findAndModify, update or delete: a filter where $where is allowed.
func CompileQueryFilter(filter bsoncore.Document, env *Env) (*Filter, error) {
	f := &Filter{env: env, allowWhere: true, js: usesJS(filter), raw: filter}
	root, err := f.parseDoc(filter, true)
	if err != nil {
		return nil, err
	}
	f.root = root
	return f, nil
}

// Scripts is the JavaScript engine and scope the filter was compiled
// with, for filters a planner compiles from its clauses: they must run
// (or refuse) JavaScript as the command's own filter does.
func (f *Filter) Scripts() (*js.Engine, string) {
	if f.env == nil {
		return nil, ""
	}
	return f.env.JS, f.env.JSScope
}
