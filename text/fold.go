package text

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Fold removes diacritics: text index version 3 matches "résumé" and
// "resume" alike unless a query asks $diacriticSensitive. A letter is
// decomposed (NFD) and its combining marks dropped; letters without a
// decomposition (ø, ł) are kept as they are.
func Fold(s string) string {
	if isASCII(s) {
		return s
	}
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return norm.NFC.String(b.String())
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
