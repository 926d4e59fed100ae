package query

import (
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/text"
)

// textExpr is a compiled $text; it matches once BindText gave it the
// collection's text index.
type textExpr struct {
	f             *Filter
	raw           bsoncore.Document
	search        string
	language      string // "" : the index's default
	caseSensitive bool
	positive      []string // tokens, not yet stemmed
	negated       []string
	phrases       []string
	cfg           *text.Config
	posT, negT    []string
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
		ev := el.Value()
		switch el.Key() {
		case "$search":
			s, ok := ev.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$search requires a string value")
			}
			t.search = s
		case "$language":
			s, ok := ev.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "$language requires a string value")
			}
			switch strings.ToLower(s) {
			case "english", "en", "none", "":
			default:
				return nil, mongoerr.New(mongoerr.BadValue, "unsupported language: %q for text index version 3", s)
			}
			t.language = strings.ToLower(s)
			if t.language == "en" {
				t.language = "english"
			}
		case "$caseSensitive", "$diacriticSensitive":
			b, ok := ev.BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "%s requires a boolean value", el.Key())
			}
			if el.Key() == "$caseSensitive" {
				t.caseSensitive = b
			}
		default:
			return nil, mongoerr.New(mongoerr.BadValue, "extra fields in $text")
		}
	}
	if _, err := d.LookupErr("$search"); err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$search required")
	}
	t.parseSearch()
	f.text = t
	return t, nil
}

// parseSearch splits $search into terms, -negated terms and "phrases".
func (t *textExpr) parseSearch() {
	s := t.search
	for len(s) > 0 {
		if i := strings.IndexByte(s, '"'); i >= 0 {
			t.addWords(s[:i])
			rest := s[i+1:]
			j := strings.IndexByte(rest, '"')
			if j < 0 {
				j = len(rest)
			}
			phrase := rest[:j]
			if strings.TrimSpace(phrase) != "" {
				t.phrases = append(t.phrases, phrase)
				t.positive = append(t.positive, text.Tokenize(phrase)...)
			}
			if j == len(rest) {
				return
			}
			s = rest[j+1:]
			continue
		}
		t.addWords(s)
		return
	}
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

func terms(toks []string, lang string) []string {
	seen := map[string]bool{}
	var out []string
	for _, tok := range toks {
		if term := text.Term(tok, lang); term != "" && !seen[term] {
			seen[term] = true
			out = append(out, term)
		}
	}
	return out
}

func (t *textExpr) matchDoc(doc []byte) bool {
	if t.cfg == nil && t.f.env != nil && t.f.env.textQuery != nil && t.f.env.textQuery.text.cfg != nil {
		t.f.BindText(*t.f.env.textQuery.text.cfg)
	}
	if t.cfg == nil {
		if t.f.exprErr == nil {
			t.f.exprErr = mongoerr.New(mongoerr.Code(27), "text index required for $text query")
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
	scores := text.TermScores(doc, *t.cfg)
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
	if t.caseSensitive && !t.hasCaseTerms(doc) {
		return 0, false
	}
	return total, true
}

func (t *textExpr) hasPhrase(doc []byte, ph string) bool {
	for _, f := range t.cfg.Fields {
		for _, s := range text.Strings(doc, f.Path) {
			if t.caseSensitive && strings.Contains(s, ph) {
				return true
			}
			if !t.caseSensitive && strings.Contains(strings.ToLower(s), strings.ToLower(ph)) {
				return true
			}
		}
	}
	return false
}

// hasCaseTerms: with $caseSensitive, some positive search word must occur
// in the document with its exact case.
func (t *textExpr) hasCaseTerms(doc []byte) bool {
	words := strings.FieldsFunc(t.search, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
	for _, f := range t.cfg.Fields {
		for _, s := range text.Strings(doc, f.Path) {
			for _, w := range words {
				if !strings.HasPrefix(w, "-") && strings.Contains(s, w) {
					return true
				}
			}
		}
	}
	return false
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
	lang := c.Language // documents are tokenised in the index's language
	if f.text.language != "" {
		lang = f.text.language // search terms in the query's
	}
	f.text.cfg = &c
	if f.env != nil && f.env.textQuery == nil {
		f.env.textQuery = f
	}
	f.text.posT = terms(f.text.positive, lang)
	f.text.negT = terms(f.text.negated, lang)
}

// TextTerms are the index terms a bound $text looks up.
func (f *Filter) TextTerms() []string {
	if f.text == nil {
		return nil
	}
	return f.text.posT
}

// TextScore is a document's $text score (false: no bound $text, or the
// document does not match it).
func (f *Filter) TextScore(doc bsoncore.Document) (float64, bool) {
	if f == nil || f.text == nil || f.text.cfg == nil {
		return 0, false
	}
	return f.text.score(doc)
}

// TextQuery is the $text document, for explain.
func (f *Filter) TextQuery() bsoncore.Document {
	if f.text == nil {
		return nil
	}
	return f.text.raw
}
