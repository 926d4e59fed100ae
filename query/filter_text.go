package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/text"
)

// textExpr is a compiled $text; it matches once BindText gave it the
// collection's text index. A document matches when it has one of the
// positive terms, every phrase and none of the negated terms or phrases;
// its score is the sum of its scores for the positive terms.
type textExpr struct {
	f        *Filter
	raw      bsoncore.Document
	search   string
	language *text.Language // nil: the index's default
	sens     text.Sensitivity
	positive []string // tokens, not yet stemmed
	negated  []string
	phrases  []string
	negPhr   []string
	cfg      *text.Config
	// posT and negT are the query's terms with its sensitivity; lookT are
	// the positive terms as the index stores them (case and diacritics
	// folded), which the index scan looks up.
	posT, negT, lookT []string
}

func parseText(f *Filter, _ string, v bsoncore.Value, collect bool) (docExpr, error) {
	if !collect && !f.inTopOr {
		return nil, mongoerr.New(mongoerr.BadValue, "$text is not allowed in this context")
	}
	if f.text != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Too many text expressions")
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "$text expects an object")
	}
	t := &textExpr{f: f, raw: d}
	els, _ := d.Elements()
	for _, el := range els {
		if err := t.parseOption(el.Key(), el.Value()); err != nil {
			return nil, err
		}
	}
	if _, err := d.LookupErr("$search"); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$search required")
	}
	t.parseSearch()
	f.text = t
	return t, nil
}

// parseOption reads one field of the $text document.
func (t *textExpr) parseOption(key string, v bsoncore.Value) error {
	switch key {
	case "$search":
		s, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "$search requires a string value")
		}
		t.search = s
	case "$language":
		s, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "$language requires a string value")
		}
		if s == "" {
			return nil // the index's default
		}
		l, ok := text.LookupLanguage(s)
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "unsupported language: %q for text index version 3", s)
		}
		t.language = l
	case "$caseSensitive", "$diacriticSensitive":
		b, ok := v.BooleanOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "%s requires a boolean value", key)
		}
		if key == "$caseSensitive" {
			t.sens.Case = b
		} else {
			t.sens.Diacritics = b
		}
	default:
		return mongoerr.New(mongoerr.BadValue, "extra fields in $text")
	}
	return nil
}

// parseSearch splits $search into terms, -negated terms, "phrases" and
// -"negated phrases".
func (t *textExpr) parseSearch() {
	s := t.search
	for len(s) > 0 {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			t.addWords(s)
			return
		}
		before := s[:i]
		neg := strings.HasSuffix(before, "-") && (i == 1 || strings.TrimRight(before[:i-1], " \t\n") != before[:i-1])
		t.addWords(before)
		rest := s[i+1:]
		j := strings.IndexByte(rest, '"')
		if j < 0 {
			j = len(rest)
		}
		t.addPhrase(rest[:j], neg)
		if j == len(rest) {
			return
		}
		s = rest[j+1:]
	}
}

func (t *textExpr) addPhrase(phrase string, neg bool) {
	if strings.TrimSpace(phrase) == "" {
		return
	}
	if neg {
		t.negPhr = append(t.negPhr, phrase)
		return
	}
	t.phrases = append(t.phrases, phrase)
	t.positive = append(t.positive, text.Tokenize(phrase)...)
}

func (t *textExpr) addWords(s string) {
	for _, w := range strings.Fields(s) {
		neg := strings.HasPrefix(w, "-")
		for _, tok := range text.Tokenize(w) {
			if neg {
				t.negated = append(t.negated, tok)
			} else {
				t.positive = append(t.positive, tok)
			}
		}
	}
}

func (t *textExpr) matchDoc(doc []byte) bool {
	if t.cfg == nil && t.f.env != nil && t.f.env.textQuery != nil && t.f.env.textQuery.text.cfg != nil {
		t.f.BindText(*t.f.env.textQuery.text.cfg)
	}
	if t.cfg == nil {
		if t.f.exprErr == nil {
			t.f.exprErr = mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
		}
		return false
	}
	_, ok := t.score(doc)
	return ok
}

// score is the document's text score and whether it matches.
func (t *textExpr) score(doc []byte) (float64, bool) {
	if len(t.posT) == 0 {
		return 0, false
	}
	scores, err := text.TermScores(doc, *t.cfg, t.sens)
	if err != nil {
		return 0, false
	}
	for _, n := range t.negT {
		if scores[n] > 0 {
			return 0, false
		}
	}
	total, any := 0.0, false
	for _, p := range t.posT {
		if s, ok := scores[p]; ok {
			total += s
			any = true
		}
	}
	if !any {
		return 0, false
	}
	for _, ph := range t.phrases {
		if !t.hasPhrase(doc, ph) {
			return 0, false
		}
	}
	for _, ph := range t.negPhr {
		if t.hasPhrase(doc, ph) {
			return 0, false
		}
	}
	return total, true
}

// hasPhrase reports ph in one of the indexed strings, compared with the
// query's sensitivity to case and diacritics.
func (t *textExpr) hasPhrase(doc []byte, ph string) bool {
	want := t.normalise(ph)
	found := false
	_ = text.EachString(doc, *t.cfg, func(s string, _ float64, _ *text.Language) {
		found = found || strings.Contains(t.normalise(s), want)
	})
	return found
}

func (t *textExpr) normalise(s string) string {
	if !t.sens.Case {
		s = strings.ToLower(s)
	}
	if !t.sens.Diacritics {
		s = text.Fold(s)
	}
	return s
}

// HasText reports a $text in the filter.
func (f *Filter) HasText() bool { return f.text != nil }

// TextOrClauses are the other clauses of the top-level $or that holds the
// filter's $text as one of its clauses (none when the $text is not under
// an $or, or is its only clause).
func (f *Filter) TextOrClauses() []bsoncore.Document { return f.textOrClauses }

// BindText gives the filter's $text the collection's text index.
func (f *Filter) BindText(cfg text.Config) {
	if f.text == nil {
		return
	}
	c := cfg
	lang := c.Language // documents are tokenised in their language
	if f.text.language != nil {
		lang = f.text.language // search terms in the query's
	}
	f.text.cfg = &c
	if f.env != nil && f.env.textQuery == nil {
		f.env.textQuery = f
	}
	f.text.posT = lang.Terms(f.text.positive, f.text.sens)
	f.text.negT = lang.Terms(f.text.negated, f.text.sens)
	f.text.lookT = lang.Terms(f.text.positive, text.Sensitivity{})
}

// TextTerms are the index terms a bound $text looks up.
func (f *Filter) TextTerms() []string {
	if f.text == nil {
		return nil
	}
	return f.text.lookT
}

// TextScore is a document's $text score (false: no bound $text, or the
// document does not match it).
func (f *Filter) TextScore(doc bsoncore.Document) (float64, bool) {
	if f == nil || f.text == nil || f.text.cfg == nil {
		return 0, false
	}
	return f.text.score(doc)
}

// ParsedTextQuery is explain's parsedTextQuery of a bound $text: its
// terms (stemmed, as looked up), negated terms, phrases and negated
// phrases (lowercased unless $caseSensitive).
func (f *Filter) ParsedTextQuery() bsoncore.Document {
	if f.text == nil {
		return nil
	}
	t := f.text
	phrases := func(ps []string) bsoncore.Array {
		b := bsoncore.NewArrayBuilder()
		for _, p := range ps {
			if !t.sens.Case {
				p = strings.ToLower(p)
			}
			b.AppendString(p)
		}
		return b.Build()
	}
	return bsoncore.NewDocumentBuilder().
		AppendValue("terms", stringArray(t.posT)).AppendValue("negatedTerms", stringArray(t.negT)).
		AppendArray("phrases", phrases(t.phrases)).AppendArray("negatedPhrases", phrases(t.negPhr)).Build()
}

// TextQuery is the $text document, for explain.
func (f *Filter) TextQuery() bsoncore.Document {
	if f.text == nil {
		return nil
	}
	return f.text.raw
}
