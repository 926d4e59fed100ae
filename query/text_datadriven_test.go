package query

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
)

// textCase runs each input filter, whose $text is bound to the text index
// the case's spec builds, over the docs: a matching document prints as
// "_id score", the score rounded to 4 places.
func textCase(t *testing.T, c *ddCase, docs []bsoncore.Document) []string {
	spec, err := index.ParseSpec(mustDoc(t, c.args), nil)
	if err != nil {
		return []string{errString(err)}
	}
	if spec.Text == nil {
		t.Fatalf("%s: not a text index", c.args)
	}
	var out []string
	for _, in := range c.input {
		out = append(out, textFilterLine(t, spec, in, docs))
	}
	return out
}

func textFilterLine(t *testing.T, spec *index.Spec, filter string, docs []bsoncore.Document) string {
	f, err := CompileFilter(mustDoc(t, filter))
	if err != nil {
		return errString(err)
	}
	f.BindText(*spec.Text)
	var hits []string
	for _, d := range docs {
		if _, _, err := spec.Keys(d); err != nil {
			hits = append(hits, typedValue(d.Lookup("_id"))+" "+errString(err))
			continue
		}
		if f.Match(d) {
			score, _ := f.TextScore(d)
			hits = append(hits, fmt.Sprintf("%s %.4g", typedValue(d.Lookup("_id")), score))
		}
	}
	if f.Err() != nil {
		return errString(f.Err())
	}
	return "[" + strings.Join(hits, ", ") + "]"
}
