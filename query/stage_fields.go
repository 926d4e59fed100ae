package query

import (
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// Document-reshaping stages ($addFields/$set, $unset, $project,
// $replaceRoot/$replaceWith). They are per-document transforms, shared by
// aggregation pipelines and pipeline-style updates (update_pipeline.go).

// docTransform reshapes one document.
type docTransform func(doc bsoncore.Document) (bsoncore.Document, error)

// transformCompiler compiles a per-document transform stage.
type transformCompiler func(spec bsoncore.Value, env *Env) (docTransform, error)

// transformRow is a row of the stage table for a transform: a stage of
// aggregation pipelines and of update pipelines, with its flags.
func transformRow(name string, compile transformCompiler, flags stageFlags) stageEntry {
	return stageEntry{name: name, transform: compile, flags: flags, compile: func(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
		t, err := compile(spec, pc.env)
		if err != nil {
			if se, ok := errors.AsType[*specError](err); ok {
				return nil, se.named(name)
			}
			return nil, mongoerr.New(mongoerr.As(err).Code, "Invalid %s :: caused by :: %s", name, mongoerr.As(err).Msg)
		}
		return transformStage(t), nil
	}}
}

// specError is a transform refusing its specification's type or shape,
// which mongod does before it parses the specification: the message
// begins with the stage's name ($set, not the $addFields it shares a
// parser with) and takes no "Invalid <stage> :: caused by ::" prefix.
type specError struct {
	code mongoerr.Code
	rest string // the message after the stage's name
}

func newSpecError(code mongoerr.Code, format string, args ...any) *specError {
	return &specError{code: code, rest: fmt.Sprintf(format, args...)}
}

func (e *specError) Error() string { return e.rest }

// named is the error as the stage called name answers it.
func (e *specError) named(name string) error { return mongoerr.New(e.code, "%s%s", name, e.rest) }

func transformStage(t docTransform) stage {
	return func(in Stream) Stream { return mapStream(in, t) }
}

// fieldsNode is a compiled $addFields specification: per field either an
// expression or (for a plain nested object or a dotted path) a sub-node
// that merges into an existing embedded document.
type fieldsNode struct {
	names []string
	exprs []Expr        // nil entry when the field has a sub-node
	subs  []*fieldsNode // nil entry when the field has an expression
}

func compileAddFields(spec bsoncore.Value, env *Env) (docTransform, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, newSpecError(mongoerr.Location40272, " specification stage must be an object, got %s", value.TypeName(spec.Type))
	}
	root := &fieldsNode{}
	if err := root.addAll(spec.Data, env.scope()); err != nil {
		return nil, err
	}
	return func(doc bsoncore.Document) (bsoncore.Document, error) {
		c := newEvalCtx(doc, env)
		v, err := root.apply(c, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
		return bsoncore.Document(v.Data), err
	}, nil
}

func (n *fieldsNode) addAll(doc []byte, s *compileScope) error {
	it := value.NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			return nil
		}
		if err := value.CheckFieldPath(string(k)); err != nil {
			return err
		}
		if err := n.add(value.SplitPath(string(k)), v, s); err != nil {
			return err
		}
	}
}

func (n *fieldsNode) add(parts []string, v bsoncore.Value, s *compileScope) error {
	name := parts[0]
	if name == "" || name[0] == '$' {
		return mongoerr.New(mongoerr.Location16410, "FieldPath field names may not start with '$'. Consider using $getField or $setField.")
	}
	nested := len(parts) > 1 || (v.Type == bsoncore.TypeEmbeddedDocument && !value.IsOperatorDoc(v) && len(v.Data) > 5)
	if !nested {
		x, err := compileExpr(v, s)
		if err != nil {
			return err
		}
		n.names, n.exprs, n.subs = append(n.names, name), append(n.exprs, x), append(n.subs, nil)
		return nil
	}
	sub := n.subNode(name)
	if len(parts) > 1 {
		return sub.add(parts[1:], v, s)
	}
	return sub.addAll(v.Data, s)
}

func (n *fieldsNode) subNode(name string) *fieldsNode {
	for i, nm := range n.names {
		if nm == name && n.subs[i] != nil {
			return n.subs[i]
		}
	}
	sub := &fieldsNode{}
	n.names, n.exprs, n.subs = append(n.names, name), append(n.exprs, nil), append(n.subs, sub)
	return sub
}

// apply sets the node's fields in v: documents merge, arrays apply to
// each element, anything else is replaced by a new document.
func (n *fieldsNode) apply(c *evalCtx, v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type == bsoncore.TypeArray {
		var out []bsoncore.Value
		for _, e := range value.ArrayValues(v.Data) {
			r, err := n.apply(c, e)
			if err != nil {
				return r, err
			}
			out = append(out, r)
		}
		return value.BuildArray(out), nil
	}
	m := newDocM()
	if v.Type == bsoncore.TypeEmbeddedDocument {
		m = leafM(v)
	}
	for i, name := range n.names {
		var r bsoncore.Value
		var err error
		if n.exprs[i] != nil {
			r, err = n.exprs[i].eval(c)
		} else {
			cur := bsoncore.Value{}
			if ch := m.child(name); ch != nil {
				cur = ch.value()
			}
			r, err = n.subs[i].apply(c, cur)
		}
		if err != nil {
			return r, err
		}
		if r.Type == 0 {
			m.removeChild(name)
			continue
		}
		m.setChild(name, leafM(r))
	}
	return m.value(), nil
}

func compileUnset(spec bsoncore.Value, env *Env) (docTransform, error) {
	var fields []bsoncore.Value
	switch spec.Type {
	case bsoncore.TypeString:
		fields = []bsoncore.Value{spec}
	case bsoncore.TypeArray:
		fields = value.ArrayValues(spec.Data)
		if len(fields) == 0 {
			return nil, newSpecError(mongoerr.Location31119, " specification must be a string or an array with at least one field")
		}
	default:
		return nil, newSpecError(mongoerr.Location31002, " specification must be a string or an array")
	}
	b := bsoncore.NewDocumentBuilder()
	for _, f := range fields {
		if f.Type != bsoncore.TypeString {
			return nil, newSpecError(mongoerr.Location31120, " specification must be a string or an array containing only string values")
		}
		if err := value.CheckNoNul(f.StringValue()); err != nil {
			return nil, err
		}
		b.AppendInt32(f.StringValue(), 0)
	}
	p, err := CompileProjectionOpts(b.Build(), ProjectionOptions{Env: env, Stage: true})
	if err != nil {
		return nil, err
	}
	return p.Apply, nil
}

func compileProjectTransform(spec bsoncore.Value, env *Env) (docTransform, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, newSpecError(mongoerr.Location15969, " specification must be an object")
	}
	if value.ArrayLen(spec.Data) == 0 {
		// Refused while parsing, so with the prefix (find takes {}).
		return nil, mongoerr.New(mongoerr.Location51272, "projection specification must have at least one field")
	}
	p, err := CompileProjectionOpts(spec.Data, ProjectionOptions{Env: env, Stage: true})
	if err != nil {
		return nil, err
	}
	return p.Apply, nil
}

// compileReplaceRoot is $replaceRoot: {newRoot: <expr>}.
func compileReplaceRoot(spec bsoncore.Value, env *Env) (docTransform, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.Location40229, "expected an object as specification for $replaceRoot stage, got %s", value.TypeName(spec.Type))
	}
	arg, ok := value.LookupField(spec.Data, "newRoot")
	if !ok || value.ArrayLen(spec.Data) != 1 {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field '$replaceRoot.newRoot' is missing but a required field")
	}
	return newRootTransform("'newRoot'", arg, env)
}

// compileReplaceWith is $replaceWith: <expr>.
func compileReplaceWith(spec bsoncore.Value, env *Env) (docTransform, error) {
	return newRootTransform("'replacement document'", spec, env)
}

func newRootTransform(what string, arg bsoncore.Value, env *Env) (docTransform, error) {
	x, err := compileExpr(arg, env.scope())
	if err != nil {
		return nil, err
	}
	return func(doc bsoncore.Document) (bsoncore.Document, error) {
		v, err := x.eval(newEvalCtx(doc, env))
		if err != nil {
			return nil, err
		}
		if v.Type != bsoncore.TypeEmbeddedDocument {
			shown := "missing"
			if v.Type != 0 {
				shown = value.Format(v)
			}
			return nil, mongoerr.New(mongoerr.Location40228, "%s must evaluate to an object, but resulting value was: %s. Type of resulting value: '%s'. Input document: %s", what, shown, exprTypeName(v), value.Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
		}
		return bsoncore.Document(v.Data), nil
	}, nil
}
