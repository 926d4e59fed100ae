package query

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// This file is the core of the aggregation expression language: compiling
// a BSON expression into an Expr tree and evaluating it against a
// document. Operators live in expr_*.go, one file per family, listed
// in exprTable (expr_registry.go); the aggregation stages reuse the same
// trees.

// Expr is a compiled aggregation expression. Evaluating yields a value or
// "missing" (a zero bsoncore.Value, Type 0), which containers drop.
type Expr interface {
	eval(c *evalCtx) (bsoncore.Value, error)
}

// Env is what a command adds around its query language: the collation
// and the constants bound by `let`. A nil *Env is the simple collation
// with no variables.
type Env struct {
	Collation *value.Collation
	vars      map[string]bsoncore.Value
	now       bsoncore.Value
	// textQuery is the filter whose $text the planner bound to a text
	// index: a pipeline's own $match and $meta: "textScore" use it.
	textQuery *Filter
	// geoNear is a $geoNear's near predicate, which $meta:
	// "geoNearDistance" and "geoNearPoint" measure documents by, and its
	// distanceMultiplier.
	geoNear           *NearPredicate
	geoNearMultiplier float64
	// JS runs $where, $function and $accumulator (NewEnv: js.Default; a
	// server sets its own, disabled by --noscripting; nil: disabled), in
	// the runtimes of JSScope (the server's: the database and the user).
	JS      *js.Engine
	JSScope string
	// ctx holds the context of the running batch (a pipeline's Next, a
	// filter's MatchContext), shared with the Envs derived from this one:
	// JavaScript calls and expressions' loops stop when it ends.
	ctx *ctxRef
}

// ctxRef is what an Env shares with the Envs derived from it at run time:
// a context that changes from batch to batch (a cursor's getMores each
// have their own), and the expressions' memory limit.
type ctxRef struct {
	cur atomic.Pointer[ctxBox]
	// exprLimit bounds the bytes one evaluation's values hold
	// (expr_budget.go); 0 is DefaultExprMemoryLimit. Tests lower it.
	exprLimit int64
}

// ctxBox lets an atomic pointer hold an interface value.
type ctxBox struct{ ctx context.Context }

// enterContext makes b's context the one of the env's JavaScript calls and
// expressions until leaveContext restores the one it returns. A caller
// sets its context only while it runs (a pipeline's Next, a filter's
// MatchContext): a context left behind would be a finished batch's, whose
// end (a maxTimeMS timer stopped with its command) would stop a later
// evaluation that has no context of its own.
func (e *Env) enterContext(b *ctxBox) (prev *ctxBox) {
	if e == nil || e.ctx == nil {
		return nil
	}
	return e.ctx.cur.Swap(b)
}

// leaveContext restores the context enterContext replaced.
func (e *Env) leaveContext(prev *ctxBox) {
	if e != nil && e.ctx != nil {
		e.ctx.cur.Store(prev)
	}
}

// context is the context of the env's JavaScript calls and expressions
// (nil: none).
func (e *Env) context() context.Context {
	if e == nil || e.ctx == nil {
		return nil
	}
	if b := e.ctx.cur.Load(); b != nil {
		return b.ctx
	}
	return nil
}

// exprMemoryLimit is the bytes one evaluation's values may hold.
func (e *Env) exprMemoryLimit() int64 {
	if e == nil || e.ctx == nil || e.ctx.exprLimit <= 0 {
		return DefaultExprMemoryLimit
	}
	return e.ctx.exprLimit
}

// usesJS reports BSON that may hold JavaScript operators.
func usesJS(b []byte) bool {
	return bytes.Contains(b, []byte("$where")) || bytes.Contains(b, []byte("$function")) ||
		bytes.Contains(b, []byte("$accumulator"))
}

// NewEnv evaluates a command's let document (constant expressions that may
// use $$NOW) and binds a collation; both may be nil. Its JavaScript runs
// in js.Default().
func NewEnv(coll *value.Collation, let bsoncore.Document) (*Env, error) {
	return NewScriptedEnv(coll, let, js.Default(), "")
}

// NewScriptedEnv is NewEnv with the JavaScript engine and scope of a
// server, which also evaluates let's JavaScript (a $function in let obeys
// --noscripting too).
func NewScriptedEnv(coll *value.Collation, let bsoncore.Document, eng *js.Engine, scope string) (*Env, error) {
	return NewCommandEnv(context.Background(), coll, let, eng, scope)
}

// NewCommandEnv is NewScriptedEnv for a command running under ctx: let's
// expressions stop when it ends.
func NewCommandEnv(ctx context.Context, coll *value.Collation, let bsoncore.Document, eng *js.Engine, scope string) (*Env, error) {
	e := &Env{Collation: coll, vars: map[string]bsoncore.Value{}, JS: eng, JSScope: scope, ctx: &ctxRef{}}
	defer e.leaveContext(e.enterContext(&ctxBox{ctx}))
	e.now = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, time.Now().UnixMilli())}
	it := value.NewIter(let)
	for {
		k, v, ok := it.Next()
		if !ok {
			return e, nil
		}
		name := string(k)
		if err := validateVarName(name); err != nil {
			return nil, err
		}
		x, err := compileExpr(v, e.scope())
		if err != nil {
			return nil, err
		}
		val, err := x.eval(&evalCtx{env: e, budget: newExprBudget(e)})
		if err != nil {
			return nil, err
		}
		if val.Type == 0 {
			val = value.Null
		}
		e.vars[name] = val
	}
}

// scripts is the engine of the env's JavaScript, nil when scripting is
// disabled.
func (e *Env) scripts() *js.Engine {
	if e == nil || !e.JS.Enabled() {
		return nil
	}
	return e.JS
}

func (e *Env) jsScope() string {
	if e == nil {
		return ""
	}
	return e.JSScope
}

func (e *Env) coll() *value.Collation {
	if e == nil {
		return nil
	}
	return e.Collation
}

// scope is the compile-time scope of an expression: the let variables.
func (e *Env) scope() *compileScope {
	s := &compileScope{}
	if e != nil {
		for name := range e.vars {
			s = s.with(name)
		}
	}
	return s
}

// compileScope lists the variable names visible while compiling, so an
// undefined $$name fails at compile time as on mongod.
type compileScope struct {
	name   string
	parent *compileScope
	// validator marks the scope of a collection validator's $expr.
	validator bool
}

// inValidator reports an expression of a collection validator.
func (s *compileScope) inValidator() bool {
	for ; s != nil; s = s.parent {
		if s.validator {
			return true
		}
	}
	return false
}

func (s *compileScope) with(name string) *compileScope { return &compileScope{name: name, parent: s} }

func (s *compileScope) has(name string) bool {
	for ; s != nil; s = s.parent {
		if s.name == name {
			return true
		}
	}
	return false
}

// evalCtx is the per-document state of an evaluation.
type evalCtx struct {
	root bsoncore.Value // $$ROOT
	cur  bsoncore.Value // $$CURRENT
	env  *Env
	vars *varBinding // $let, $map, $filter locals, innermost first
	// query is the find's filter, whose $text gives {$meta: "textScore"}.
	query *Filter
	// budget is the memory and work of the evaluation (expr_budget.go),
	// shared with the contexts bind makes.
	budget *exprBudget
}

type varBinding struct {
	name   string
	val    bsoncore.Value
	parent *varBinding
}

// newEvalCtx is the context of an evaluation over doc. Its budget is made
// when the evaluation first counts memory or work (budgetOf): most
// evaluations, a field path, a constant, never do.
func newEvalCtx(doc bsoncore.Document, env *Env) *evalCtx {
	d := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	return &evalCtx{root: d, cur: d, env: env}
}

// reset makes c the context of a new evaluation over doc, as newEvalCtx
// would.
func (c *evalCtx) reset(doc bsoncore.Document, env *Env) {
	d := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	*c = evalCtx{root: d, cur: d, env: env}
}

// bind returns a context with one more local variable.
func (c *evalCtx) bind(name string, v bsoncore.Value) *evalCtx {
	c.budgetOf() // before the copy, so that both share it
	n := *c
	n.vars = &varBinding{name: name, val: v, parent: c.vars}
	return &n
}

func (c *evalCtx) lookupVar(name string) bsoncore.Value {
	for b := c.vars; b != nil; b = b.parent {
		if b.name == name {
			return b.val
		}
	}
	switch name {
	case "ROOT":
		return c.root
	case "CURRENT":
		return c.cur
	case "REMOVE":
		return bsoncore.Value{}
	case "NOW":
		if c.env != nil {
			return c.env.now
		}
		return bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, time.Now().UnixMilli())}
	}
	if c.env != nil {
		if v, ok := c.env.vars[name]; ok {
			return v
		}
	}
	return bsoncore.Value{}
}

// CompileExpr compiles an aggregation expression for callers outside the
// package (stages, the server's let handling).
func CompileExpr(v bsoncore.Value, env *Env) (Expr, error) { return compileExpr(v, env.scope()) }

// EvalExpr evaluates e against doc.
func EvalExpr(e Expr, doc bsoncore.Document, env *Env) (bsoncore.Value, error) {
	return e.eval(newEvalCtx(doc, env))
}

// compileExpr compiles any expression value: "$path", "$$var.path", an
// operator document, an object or array of expressions, or a constant.
func compileExpr(v bsoncore.Value, s *compileScope) (Expr, error) {
	switch v.Type {
	case bsoncore.TypeString:
		str := v.StringValue()
		if strings.HasPrefix(str, "$") {
			return compileFieldPath(str, s)
		}
	case bsoncore.TypeEmbeddedDocument:
		if k := value.FirstKey(v.Data); len(k) > 0 && k[0] == '$' {
			return compileOperator(v.Data, s)
		}
		return compileObjectExpr(v.Data, s)
	case bsoncore.TypeArray:
		var arr arrayExpr
		for _, e := range value.ArrayValues(v.Data) {
			x, err := compileExpr(e, s)
			if err != nil {
				return nil, err
			}
			arr = append(arr, x)
		}
		return arr, nil
	}
	return literalExpr{v}, nil
}

// literalExpr is a constant.
type literalExpr struct{ v bsoncore.Value }

func (l literalExpr) eval(*evalCtx) (bsoncore.Value, error) { return l.v, nil }

// pathExprX is "$a.b" (base "CURRENT") or "$$var.a.b".
type pathExprX struct {
	base  string
	parts []string
}

func compileFieldPath(s string, scope *compileScope) (Expr, error) {
	if strings.HasPrefix(s, "$$") {
		name, rest, _ := strings.Cut(s[2:], ".")
		if err := validateVarUse(name, scope); err != nil {
			return nil, err
		}
		p := &pathExprX{base: name}
		if rest != "" {
			p.parts = value.SplitPath(rest)
		}
		return p, nil
	}
	if s == "$" {
		return nil, mongoerr.New(mongoerr.Location16872, "'$' by itself is not a valid FieldPath")
	}
	if err := value.CheckNoNul(s); err != nil {
		return nil, err
	}
	if err := value.CheckFieldPath(s[1:]); err != nil {
		return nil, err
	}
	return &pathExprX{base: "CURRENT", parts: value.SplitPath(s[1:])}, nil
}

func validateVarUse(name string, scope *compileScope) error {
	switch name {
	case "ROOT", "CURRENT", "REMOVE", "NOW", "CLUSTER_TIME", "USER_ROLES", "SEARCH_META":
		return nil
	}
	if err := validateVarRead(name); err != nil {
		return err
	}
	if !scope.has(name) {
		return mongoerr.New(mongoerr.Location17276, "Use of undefined variable: %s", name)
	}
	return nil
}

// validateVarRead checks a variable name being read, before it is looked
// up: as a user variable's, except that an uppercase first letter is let
// through for the system variables.
func validateVarRead(name string) error {
	if name == "" {
		return mongoerr.New(mongoerr.FailedToParse, "empty variable names are not allowed")
	}
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && c < 0x80 {
		return mongoerr.New(mongoerr.FailedToParse, "'%s' starts with an invalid character for a user variable name", name)
	}
	return varNameChars(name)
}

// validateVarName checks a user variable name: it must start with a
// lowercase letter (or a non-ASCII character) and hold only letters,
// digits and '_'.
func validateVarName(name string) error {
	if name == "" {
		return mongoerr.New(mongoerr.FailedToParse, "empty variable names are not allowed")
	}
	if c := name[0]; !(c >= 'a' && c <= 'z') && c < 0x80 {
		return mongoerr.New(mongoerr.FailedToParse, "'%s' starts with an invalid character for a user variable name", name)
	}
	return varNameChars(name)
}

// varNameChars checks that a variable name holds only letters, digits, '_'
// and non-ASCII characters.
func varNameChars(name string) error {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80) {
			return mongoerr.New(mongoerr.FailedToParse, "'%s' contains an invalid character for a variable name: '%c'", name, c)
		}
	}
	return nil
}

func (p *pathExprX) eval(c *evalCtx) (bsoncore.Value, error) {
	return evalPath(c.lookupVar(p.base), p.parts), nil
}

// evalPath follows a path with aggregation semantics: through an array it
// maps over the elements (dropping missing results), so "$a.b" on
// [{b: 1}, {}] is [1].
func evalPath(v bsoncore.Value, parts []string) bsoncore.Value {
	for i, p := range parts {
		switch v.Type {
		case bsoncore.TypeEmbeddedDocument:
			var ok bool
			if v, ok = value.LookupField(v.Data, p); !ok {
				return bsoncore.Value{}
			}
		case bsoncore.TypeArray:
			var out []bsoncore.Value
			for _, e := range value.ArrayValues(v.Data) {
				if e.Type != bsoncore.TypeEmbeddedDocument && e.Type != bsoncore.TypeArray {
					continue
				}
				if r := evalPath(e, parts[i:]); r.Type != 0 {
					out = append(out, r)
				}
			}
			return value.BuildArray(out)
		default:
			return bsoncore.Value{}
		}
	}
	return v
}

// objectExpr is {a: <expr>, b: <expr>}; missing results are left out.
type objectExpr struct {
	keys  []string
	exprs []Expr
}

// compileObjectExpr checks each field as mongod does, in its order: the
// name, then that no earlier field had it, then its value.
func compileObjectExpr(doc []byte, s *compileScope) (Expr, error) {
	o := &objectExpr{}
	seen := map[string]bool{}
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			return o, nil
		}
		key := string(k)
		if err := value.CheckFieldName(key); err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, mongoerr.New(mongoerr.Location16406, "duplicate field name specified in object literal: %s", value.Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
		}
		seen[key] = true
		x, err := compileExpr(v, s)
		if err != nil {
			return nil, err
		}
		o.keys = append(o.keys, key)
		o.exprs = append(o.exprs, x)
	}
}

// eval counts each field as it is copied in; the field's own value is
// garbage once copied, so it stops counting (keep).
func (o *objectExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	for i, x := range o.exprs {
		m := c.mark()
		v, err := x.eval(c)
		if err != nil {
			return bsoncore.Value{}, err
		}
		c.release(m)
		if v.Type == 0 {
			continue
		}
		if err := c.grow("$object", 1+len(o.keys[i])+1+len(v.Data)); err != nil {
			return bsoncore.Value{}, err
		}
		dst = bsoncore.AppendValueElement(dst, o.keys[i], v)
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dst}, nil
}

// arrayExpr is [<expr>, ...]; missing elements become null.
type arrayExpr []Expr

// eval counts as objectExpr's does.
func (a arrayExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	out := newArrayBuilder(c, "$array")
	for _, x := range a {
		m := c.mark()
		v, err := x.eval(c)
		if err != nil {
			return bsoncore.Value{}, err
		}
		c.release(m)
		if err := out.add(v); err != nil {
			return bsoncore.Value{}, err
		}
	}
	return out.value(), nil
}

func compileOperator(doc []byte, s *compileScope) (Expr, error) {
	if value.ArrayLen(doc) != 1 {
		return nil, mongoerr.New(mongoerr.Location15983, "An object representing an expression must have exactly one field: %s", value.Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	it := value.NewIter(doc)
	k, arg, _ := it.Next()
	name := string(k)
	entry, ok := exprOps[name]
	op := entry.op
	switch {
	case !ok:
		return nil, mongoerr.New(mongoerr.InvalidPipelineOperator, "Unrecognized expression '%s'", name)
	case op.js && s.inValidator():
		return nil, mongoerr.New(mongoerr.Location4660800, "%s cannot be used inside a validator.", name)
	case op.compile != nil:
		return op.compile(name, arg, s)
	}
	args := []bsoncore.Value{arg}
	if arg.Type == bsoncore.TypeArray {
		args = value.ArrayValues(arg.Data)
	}
	if len(args) < op.min || (op.max >= 0 && len(args) > op.max) {
		return nil, arityError(name, op, len(args))
	}
	call := &callExpr{name: name, fn: op.fn}
	for _, a := range args {
		x, err := compileExpr(a, s)
		if err != nil {
			return nil, err
		}
		call.args = append(call.args, x)
	}
	return call, nil
}

func arityError(name string, op exprOp, n int) error {
	switch {
	case op.min == op.max:
		return mongoerr.New(mongoerr.Location16020, "Expression %s takes exactly %d arguments. %d were passed in.", name, op.min, n)
	case n < op.min:
		return mongoerr.New(mongoerr.Location16020, "Expression %s takes at least %d arguments, and at most %d. %d were passed in.", name, op.min, op.max, n)
	}
	return mongoerr.New(mongoerr.Location16020, "Expression %s takes at most %d arguments. %d were passed in.", name, op.max, n)
}

// callExpr evaluates its arguments, then the operator.
type callExpr struct {
	name string
	fn   func(c *evalCtx, args []bsoncore.Value) (bsoncore.Value, error)
	args []Expr
}

// eval holds the arguments while the operator runs; after it, only the
// result is held (keep), which bounds the result of every operator, even
// those that do not count what they build. The operator's work is
// counted as the size of its arguments, which most read whole.
func (e *callExpr) eval(c *evalCtx) (bsoncore.Value, error) {
	m := c.mark()
	vals := make([]bsoncore.Value, len(e.args))
	read := 0
	for i, a := range e.args {
		v, err := a.eval(c)
		if err != nil {
			return bsoncore.Value{}, err
		}
		vals[i] = v
		read += len(v.Data)
	}
	v, err := e.fn(c, vals)
	if err != nil {
		return v, err
	}
	if err := c.keep(e.name, m, v); err != nil {
		return v, err
	}
	return v, c.step(read)
}

// exprTruthy is aggregation truthiness: false, null, undefined, missing and
// zero are false; everything else (empty arrays included) is true.
func exprTruthy(v bsoncore.Value) bool {
	switch v.Type {
	case 0, bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false
	case bsoncore.TypeBoolean:
		return v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		return !value.IsZero(v)
	}
	return true
}

// nullish reports null, undefined or missing: most operators return null
// for such an argument.
func nullish(v bsoncore.Value) bool {
	return v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined
}

// exprTypeName is $type's name for v ("missing" for a missing value).
func exprTypeName(v bsoncore.Value) string {
	if v.Type == 0 {
		return "missing"
	}
	return value.TypeName(v.Type)
}
