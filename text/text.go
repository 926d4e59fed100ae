// Package text owns text search's words: tokenising, the languages
// mongod knows (Snowball stemmers from github.com/blevesearch/snowballstem
// and per-language stop words), diacritic folding, which language applies
// to which string of a document (language_override), and the per-term
// scores of a document's indexed fields. Text indexes (package index) and
// the $text operator (package query) both use it, so an index entry's
// term is exactly the term a query looks up.
package text

import (
	"math"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// Wildcard is the field name of a text index over every string field.
const Wildcard = "$**"

// Field is one indexed field of a text index and its weight. Path
// Wildcard stands for every field not listed otherwise.
type Field struct {
	Path   string
	Weight float64
}

// Config is what a text index tells a $text query: its fields, default
// language, and the field of a document (or sub-document) that names the
// language of its strings.
type Config struct {
	Fields           []Field
	Language         *Language
	LanguageOverride string
}

// Sensitivity says which differences between words a match keeps: by
// default "Café" and "cafe" are one term.
type Sensitivity struct {
	Case, Diacritics bool
}

// Tokenize splits s on every character that is not a letter, mark or
// digit.
func Tokenize(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
}

// Term turns one token into its index term in language l: "" for a stop
// word, else its stem, lowercased and diacritic-folded unless sens keeps
// case or diacritics. Stop words are recognised in any case and with or
// without diacritics; the stemmer sees the word with its diacritics,
// which the Snowball stemmers of accented languages need.
func (l *Language) Term(tok string, sens Sensitivity) string {
	lower := l.Lower(tok)
	if l.IsStopWord(lower) {
		return ""
	}
	w := lower
	if sens.Case {
		w = tok
	}
	w = l.Stem(w)
	if !sens.Diacritics {
		w = Fold(w)
	}
	return w
}

// Lower lowercases s by the language's rules: Turkish maps I to dotless ı
// and İ to i, as mongod's Turkish case folding does.
func (l *Language) Lower(s string) string {
	if l.Name == "turkish" {
		return strings.ToLowerSpecial(unicode.TurkishCase, s)
	}
	return strings.ToLower(s)
}

// Terms are the distinct index terms of toks.
func (l *Language) Terms(toks []string, sens Sensitivity) []string {
	seen := map[string]bool{}
	var out []string
	for _, tok := range toks {
		if t := l.Term(tok, sens); t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// TermScores gives every term of the string values of doc's indexed
// fields its score contribution, following mongod's formula: per string,
// weight x sum over occurrences of 1/2^i x (0.5 x count/tokens + 0.5),
// x 1.1 when the whole string is the term.
// Each string is read in its language (LanguageOf); a document naming an
// unsupported language is an error, as on mongod's insert.
func TermScores(doc bsoncore.Document, cfg Config, sens Sensitivity) (map[string]float64, error) {
	out := map[string]float64{}
	err := EachString(doc, cfg, func(s string, weight float64, lang *Language) {
		toks := Tokenize(s)
		counts := map[string]int{}
		for _, t := range toks {
			if term := lang.Term(t, sens); term != "" {
				counts[term]++
			}
		}
		for term, c := range counts {
			freq := 0.0
			for i := 0; i < c; i++ {
				freq += 1 / math.Pow(2, float64(i))
			}
			coeff := 0.5*float64(c)/float64(len(toks)) + 0.5
			adjust := 1.0
			if len(s) == len(term) && strings.EqualFold(s, term) {
				adjust = 1.1 // mongod's boost for a string that is the term itself
			}
			out[term] += weight * freq * coeff * adjust
		}
	})
	return out, err
}

// EachString calls fn with every indexed string of doc, its field's
// weight and its language.
func EachString(doc bsoncore.Document, cfg Config, fn func(s string, weight float64, lang *Language)) error {
	lang, err := cfg.LanguageOf(doc, cfg.Language)
	if err != nil {
		return err
	}
	var wildcard *Field
	listed := map[string]bool{}
	for i, f := range cfg.Fields {
		if f.Path == Wildcard {
			wildcard = &cfg.Fields[i]
			continue
		}
		listed[f.Path] = true
		w := walker{cfg: &cfg, weight: f.Weight, fn: fn}
		if err := w.path(doc, strings.Split(f.Path, "."), lang); err != nil {
			return err
		}
	}
	if wildcard != nil {
		w := walker{cfg: &cfg, weight: wildcard.Weight, fn: fn, skip: listed}
		return w.all(doc, "", lang)
	}
	return nil
}

// LanguageOf is the language of doc's strings: the one its override field
// names, else def (the enclosing document's, or the index's default).
func (cfg Config) LanguageOf(doc bsoncore.Document, def *Language) (*Language, error) {
	if cfg.LanguageOverride == "" {
		return def, nil
	}
	v, err := doc.LookupErr(cfg.LanguageOverride)
	if err != nil {
		return def, nil
	}
	name, ok := v.StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location17261, "found language override field in document with non-string type")
	}
	l, ok := LookupLanguage(name)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location17262, "language override unsupported: %s", name)
	}
	return l, nil
}

// walker visits the strings of one indexed field (or of the wildcard).
type walker struct {
	cfg    *Config
	weight float64
	fn     func(s string, weight float64, lang *Language)
	skip   map[string]bool // wildcard: paths indexed with their own weight
}

// path visits the strings parts reaches from doc, through arrays and
// sub-documents; a sub-document's override field sets its language.
func (w *walker) path(doc bsoncore.Document, parts []string, lang *Language) error {
	v, err := doc.LookupErr(parts[0])
	if err != nil {
		return nil
	}
	return w.value(v, parts[1:], lang)
}

func (w *walker) value(v bsoncore.Value, rest []string, lang *Language) error {
	switch v.Type {
	case bsoncore.TypeString:
		if len(rest) == 0 {
			w.fn(v.StringValue(), w.weight, lang)
		}
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, e := range vals {
			if err := w.value(e, rest, lang); err != nil {
				return err
			}
		}
	case bsoncore.TypeEmbeddedDocument:
		if len(rest) == 0 {
			return nil
		}
		sub := v.Document()
		l, err := w.cfg.LanguageOf(sub, lang)
		if err != nil {
			return err
		}
		return w.path(sub, rest, l)
	}
	return nil
}

// all visits every string under doc (prefix: its path) but the listed
// fields and the language override field.
func (w *walker) all(doc bsoncore.Document, prefix string, lang *Language) error {
	els, _ := doc.Elements()
	for _, el := range els {
		p := prefix + el.Key()
		if w.skip[p] || (el.Key() == w.cfg.LanguageOverride && el.Value().Type == bsoncore.TypeString) {
			continue
		}
		if err := w.anyValue(el.Value(), p, lang); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) anyValue(v bsoncore.Value, p string, lang *Language) error {
	switch v.Type {
	case bsoncore.TypeString:
		w.fn(v.StringValue(), w.weight, lang)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for _, e := range vals {
			if err := w.anyValue(e, p, lang); err != nil {
				return err
			}
		}
	case bsoncore.TypeEmbeddedDocument:
		sub := v.Document()
		l, err := w.cfg.LanguageOf(sub, lang)
		if err != nil {
			return err
		}
		return w.all(sub, p+".", l)
	}
	return nil
}
