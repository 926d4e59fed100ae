package text

import (
	"testing"
	"unicode/utf8"
)

// FuzzTerms runs every language's tokenising, stop words, stemming and
// folding over arbitrary text (invalid UTF-8 too): the Snowball stemmers
// must not panic, and a term of valid text is valid text.
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"Running runners", "Les élèves", "Дети бегали", "Çocuklar İSTANBUL", "\xff\xfeabc", "ﬁnal ǅemal"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range []string{"none", "danish", "dutch", "english", "finnish", "french", "german", "hungarian",
			"italian", "norwegian", "portuguese", "romanian", "russian", "spanish", "swedish", "turkish"} {
			l, _ := LookupLanguage(name)
			for _, sens := range []Sensitivity{{}, {Case: true, Diacritics: true}} {
				for _, term := range l.Terms(Tokenize(s), sens) {
					if utf8.ValidString(s) && !utf8.ValidString(term) {
						t.Fatalf("%s: term %q of %q is not UTF-8", name, term, s)
					}
				}
			}
		}
	})
}
