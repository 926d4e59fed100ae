package query

import (
	"math"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
)

// Text search: tokenising, stop words, a small Porter-style stemmer, the
// $text operator and text scores. Text indexes (index package) and $text
// matching share these functions, so an index entry's term is exactly the
// term a query looks up.

// TextField is one indexed field of a text index and its weight.
type TextField struct {
	Path   string
	Weight float64
}

// TextConfig is what a text index tells a $text query: its fields and
// default language ("none" turns stop words and stemming off).
type TextConfig struct {
	Fields   []TextField
	Language string
}

var englishStopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
	before being below between both but by can could did do does doing down during each few for from further had has
	have having he her here hers herself him himself his how i if in into is it its itself just me more most my myself
	no nor not now of off on once only or other our ours ourselves out over own same she should so some such than that
	the their theirs them themselves then there these they this those through to too under until up very was we were
	what when where which while who whom why will with would you your yours yourself yourselves`) {
		englishStopWords[w] = true
	}
	topLevelOps["$text"] = parseText
}

// Tokenize splits s on every character that is not a letter or digit and
// lowercases the pieces.
func Tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// TextTerm turns one lowercased token into its index term: "" for a stop
// word, else its stem (language "none": the token itself).
func TextTerm(tok, language string) string {
	if language == "none" {
		return tok
	}
	if englishStopWords[tok] {
		return ""
	}
	return Stem(tok)
}

// TextTermScores gives every term of the string values of doc's indexed
// fields its score contribution, following mongod's formula: per field,
// weight x sum over occurrences of 1/2^i x (0.5 x count/tokens + 0.5).
func TextTermScores(doc bsoncore.Document, cfg TextConfig) map[string]float64 {
	out := map[string]float64{}
	for _, f := range cfg.Fields {
		for _, s := range textStrings(doc, f.Path) {
			toks := Tokenize(s)
			counts := map[string]int{}
			for _, t := range toks {
				if term := TextTerm(t, cfg.Language); term != "" {
					counts[term]++
				}
			}
			for term, c := range counts {
				freq := 0.0
				for i := 0; i < c; i++ {
					freq += 1 / math.Pow(2, float64(i))
				}
				coeff := 0.5*float64(c)/float64(len(toks)) + 0.5
				out[term] += f.Weight * freq * coeff
			}
		}
	}
	return out
}

// textStrings lists the strings a path reaches (through arrays).
func textStrings(doc bsoncore.Document, path string) []string {
	var out []string
	walkPath(doc, splitPath(path), func(v bsoncore.Value, kind visitKind) bool {
		if kind == kindValue && v.Type == bsoncore.TypeString {
			out = append(out, v.StringValue())
		}
		return false
	})
	return out
}

// Stem is a small Porter-style English stemmer: plurals, -ed/-ing, then
// common derivational suffixes.
func Stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	// Step 1a: plurals.
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
	case strings.HasSuffix(w, "s"):
		w = w[:len(w)-1]
	}
	// Step 1b: -eed, -ed, -ing.
	switch {
	case strings.HasSuffix(w, "eed"):
		if measure(w[:len(w)-3]) > 0 {
			w = w[:len(w)-1]
		}
	case strings.HasSuffix(w, "ed") && hasVowel(w[:len(w)-2]):
		w = fix1b(w[:len(w)-2])
	case strings.HasSuffix(w, "ing") && hasVowel(w[:len(w)-3]):
		w = fix1b(w[:len(w)-3])
	}
	// Step 1c: y -> i after a vowel-bearing stem.
	if strings.HasSuffix(w, "y") && hasVowel(w[:len(w)-1]) {
		w = w[:len(w)-1] + "i"
	}
	// Step 2/3/4 (abridged): derivational suffixes on long enough stems.
	for _, r := range stemRules {
		if strings.HasSuffix(w, r[0]) {
			stem := w[:len(w)-len(r[0])]
			if measure(stem) > 0 {
				w = stem + r[1]
			}
			break
		}
	}
	for _, suf := range stemDrops {
		if strings.HasSuffix(w, suf) {
			if stem := w[:len(w)-len(suf)]; measure(stem) > 1 {
				w = stem
			}
			break
		}
	}
	// Step 5: a final e.
	if strings.HasSuffix(w, "e") && measure(w[:len(w)-1]) > 1 {
		w = w[:len(w)-1]
	}
	return w
}

var stemRules = [][2]string{
	{"ational", "ate"}, {"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"izer", "ize"},
	{"abli", "able"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"},
	{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}, {"alism", "al"}, {"iveness", "ive"},
	{"fulness", "ful"}, {"ousness", "ous"}, {"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"},
	{"icate", "ic"}, {"ative", ""}, {"alize", "al"}, {"iciti", "ic"}, {"ical", "ic"}, {"ful", ""}, {"ness", ""},
}

var stemDrops = []string{"ement", "ment", "ance", "ence", "able", "ible", "ant", "ent", "ism", "ate",
	"iti", "ous", "ive", "ize", "al", "er", "ic"}

func fix1b(w string) string {
	switch {
	case strings.HasSuffix(w, "at"), strings.HasSuffix(w, "bl"), strings.HasSuffix(w, "iz"):
		return w + "e"
	case len(w) >= 2 && w[len(w)-1] == w[len(w)-2] && isConsonant(w, len(w)-1) &&
		!strings.ContainsRune("lsz", rune(w[len(w)-1])):
		return w[:len(w)-1]
	case measure(w) == 1 && cvc(w):
		return w + "e"
	}
	return w
}

func isConsonant(w string, i int) bool {
	switch w[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !isConsonant(w, i-1)
	}
	return true
}

func hasVowel(w string) bool {
	for i := range len(w) {
		if !isConsonant(w, i) {
			return true
		}
	}
	return false
}

// measure counts the vowel-consonant sequences of w (Porter's m).
func measure(w string) int {
	m, prevVowel := 0, false
	for i := range len(w) {
		c := isConsonant(w, i)
		if c && prevVowel {
			m++
		}
		prevVowel = !c
	}
	return m
}

func cvc(w string) bool {
	n := len(w)
	return n >= 3 && isConsonant(w, n-3) && !isConsonant(w, n-2) && isConsonant(w, n-1) &&
		!strings.ContainsRune("wxy", rune(w[n-1]))
}

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
	cfg           *TextConfig
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
				t.positive = append(t.positive, Tokenize(phrase)...)
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
		for _, tok := range Tokenize(w) {
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
		if term := TextTerm(tok, lang); term != "" && !seen[term] {
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
	scores := TextTermScores(doc, *t.cfg)
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
		for _, s := range textStrings(doc, f.Path) {
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
		for _, s := range textStrings(doc, f.Path) {
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
func (f *Filter) BindText(cfg TextConfig) {
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
