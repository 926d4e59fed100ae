package query

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// $redact: the expression decides per document and embedded document
// whether to keep it whole ($$KEEP), drop it ($$PRUNE) or descend into it
// ($$DESCEND).

// redactVars are the values $redact's expression must return.
var redactVars = map[string]string{"DESCEND": "descend", "PRUNE": "prune", "KEEP": "keep"}

func compileRedactStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	scope := pc.env.scope()
	for name := range redactVars {
		scope = scope.with(name)
	}
	x, err := compileExpr(spec, scope)
	if err != nil {
		return nil, err
	}
	return func(in Stream) Stream {
		return mapStream(in, func(d bsoncore.Document) (bsoncore.Document, error) {
			c := newEvalCtx(d, pc.env)
			for name, v := range redactVars {
				c = c.bind(name, value.String(v))
			}
			v, keep, err := redact(x, c, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
			if err != nil || !keep {
				return nil, err
			}
			return v.Data, nil
		})
	}, nil
}

// redact evaluates the expression with $$CURRENT at doc and applies the
// verdict; descending recurses into sub-documents, also inside arrays.
func redact(x Expr, c *evalCtx, doc bsoncore.Value) (bsoncore.Value, bool, error) {
	sub := *c
	sub.cur = doc
	v, err := x.eval(&sub)
	if err != nil {
		return v, false, err
	}
	verdict, _ := v.StringValueOK()
	switch {
	case v.Type == bsoncore.TypeString && verdict == "keep":
		return doc, true, nil
	case v.Type == bsoncore.TypeString && verdict == "prune":
		return bsoncore.Value{}, false, nil
	case v.Type != bsoncore.TypeString || verdict != "descend":
		return v, false, mongoerr.New(mongoerr.Location17053, "$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", value.Format(v))
	}
	idx, dst := bsoncore.AppendDocumentStart(nil)
	it := value.NewIter(doc.Data)
	for {
		k, e, ok := it.Next()
		if !ok {
			break
		}
		r, keep, err := redactValue(x, c, e)
		if err != nil {
			return r, false, err
		}
		if keep {
			dst = bsoncore.AppendValueElement(dst, string(k), r)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dst}, true, nil
}

func redactValue(x Expr, c *evalCtx, v bsoncore.Value) (bsoncore.Value, bool, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return redact(x, c, v)
	case bsoncore.TypeArray:
		var out []bsoncore.Value
		for _, e := range value.ArrayValues(v.Data) {
			r, keep, err := redactValue(x, c, e)
			if err != nil {
				return r, false, err
			}
			if keep {
				out = append(out, r)
			}
		}
		return value.BuildArray(out), true, nil
	}
	return v, true, nil
}
