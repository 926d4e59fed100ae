// Package text owns text search's words: tokenising, English stop words
// and stemming, and the per-term scores of a document's indexed fields.
// Text indexes (package index) and the $text operator (package query) both
// use it, so an index entry's term is exactly the term a query looks up.
package text

import (
	"math"
	"strings"
	"unicode"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/value"
)

// Field is one indexed field of a text index and its weight.
type Field struct {
	Path   string
	Weight float64
}

// Config is what a text index tells a $text query: its fields and
// default language ("none" turns stop words and stemming off).
type Config struct {
	Fields   []Field
	Language string
}

// englishStopWords are the words an English text index leaves out.
var englishStopWords = wordSet(`a about above after again against all am an and any are as at be because been
	before being below between both but by can could did do does doing down during each few for from further had has
	have having he her here hers herself him himself his how i if in into is it its itself just me more most my myself
	no nor not now of off on once only or other our ours ourselves out over own same she should so some such than that
	the their theirs them themselves then there these they this those through to too under until up very was we were
	what when where which while who whom why will with would you your yours yourself yourselves`)

// wordSet is the set of the space-separated words of s.
func wordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(s) {
		set[w] = true
	}
	return set
}

// Tokenize splits s on every character that is not a letter or digit and
// lowercases the pieces.
func Tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// Term turns one lowercased token into its index term: "" for a stop
// word, else its stem (language "none": the token itself).
func Term(tok, language string) string {
	if language == "none" {
		return tok
	}
	if englishStopWords[tok] {
		return ""
	}
	return Stem(tok)
}

// TermScores gives every term of the string values of doc's indexed
// fields its score contribution, following mongod's formula: per field,
// weight x sum over occurrences of 1/2^i x (0.5 x count/tokens + 0.5).
func TermScores(doc bsoncore.Document, cfg Config) map[string]float64 {
	out := map[string]float64{}
	for _, f := range cfg.Fields {
		for _, s := range Strings(doc, f.Path) {
			toks := Tokenize(s)
			counts := map[string]int{}
			for _, t := range toks {
				if term := Term(t, cfg.Language); term != "" {
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

// Strings lists the strings a path reaches (through arrays).
func Strings(doc bsoncore.Document, path string) []string {
	var out []string
	value.WalkPath(doc, value.SplitPath(path), func(v bsoncore.Value, kind value.VisitKind) bool {
		if kind == value.KindValue && v.Type == bsoncore.TypeString {
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
