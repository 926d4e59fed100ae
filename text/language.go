package text

import (
	"strings"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/danish"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/finnish"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/hungarian"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/norwegian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/romanian"
	"github.com/blevesearch/snowballstem/russian"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/swedish"
	"github.com/blevesearch/snowballstem/turkish"
)

// Language is one of mongod's text search languages: its Snowball stemmer
// and its stop words. "none" has neither.
type Language struct {
	Name string
	stem func(*snowballstem.Env) bool
	stop map[string]bool // keys diacritic-folded, as tokens are compared
}

// None is the language that neither stems nor drops stop words.
var None = &Language{Name: "none"}

// languages are mongod's, by long name; codes maps the ISO 639-1 codes it
// also accepts onto them.
var (
	languages = map[string]*Language{"none": None}
	codes     = map[string]string{
		"da": "danish", "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
		"hu": "hungarian", "it": "italian", "nb": "norwegian", "pt": "portuguese", "ro": "romanian",
		"ru": "russian", "es": "spanish", "sv": "swedish", "tr": "turkish",
	}
)

func init() {
	for name, stem := range map[string]func(*snowballstem.Env) bool{
		"danish": danish.Stem, "dutch": dutch.Stem, "english": english.Stem, "finnish": finnish.Stem,
		"french": french.Stem, "german": german.Stem, "hungarian": hungarian.Stem, "italian": italian.Stem,
		"norwegian": norwegian.Stem, "portuguese": portuguese.Stem, "romanian": romanian.Stem,
		"russian": russian.Stem, "spanish": spanish.Stem, "swedish": swedish.Stem, "turkish": turkish.Stem,
	} {
		stop := map[string]bool{}
		for _, w := range strings.Fields(stopWords[name]) {
			stop[Fold(w)] = true
		}
		languages[name] = &Language{Name: name, stem: stem, stop: stop}
	}
}

// LookupLanguage finds a language by its long name or two-letter code, in
// any case, as mongod does.
func LookupLanguage(name string) (*Language, bool) {
	n := strings.ToLower(name)
	if long, ok := codes[n]; ok {
		n = long
	}
	l, ok := languages[n]
	return l, ok
}

// IsStopWord reports a lowercased token the language leaves out.
func (l *Language) IsStopWord(tok string) bool { return l.stop[Fold(tok)] }

// Stem is the Snowball stem of a lowercased token (the token itself for
// "none").
func (l *Language) Stem(tok string) string {
	if l.stem == nil {
		return tok
	}
	env := snowballstem.NewEnv(tok)
	l.stem(env)
	return env.Current()
}
