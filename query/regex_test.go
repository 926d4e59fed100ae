package query

import (
	"fmt"
	"testing"
)

// TestPCREFeatures: patterns RE2 refuses run on the backtracking engine
// with PCRE's meaning, and report byte offsets like RE2's.
func TestPCREFeatures(t *testing.T) {
	for _, c := range []struct {
		pattern, options, input string
		want                    string // FindStringSubmatchIndex
	}{
		{`(\w)\1`, "", "abccd", "[2 4 2 3]"},                  // backreference
		{`(?<=é)x`, "", "éx", "[2 3]"},                        // lookbehind, offsets in bytes
		{`a(?=b)`, "", "ac ab", "[3 4]"},                      // lookahead
		{`a++b`, "", "aaab", "[0 4]"},                         // possessive
		{`(?>a+)b`, "", "aab", "[0 3]"},                       // atomic group
		{`(?<word>\w+) \k<word>`, "", "hey hey", "[0 7 0 3]"}, // named backreference
		{`(?<=A)b`, "i", "aB", "[1 2]"},                       // options apply
		{`(x)?(?=y)y`, "", "y", "[0 1 -1 -1]"},                // a group that did not take part
	} {
		re, err := compileRegex(c.pattern, c.options)
		if err != nil {
			t.Fatalf("%s: %v", c.pattern, err)
		}
		if re.bt == nil {
			t.Fatalf("%s compiled on RE2, which cannot have its meaning", c.pattern)
		}
		if got := fmt.Sprint(re.FindStringSubmatchIndex(c.input)); got != c.want {
			t.Errorf("%s on %q: %s, want %s", c.pattern, c.input, got, c.want)
		}
		if !re.MatchString(c.input) || !re.Match([]byte(c.input)) {
			t.Errorf("%s does not match %q", c.pattern, c.input)
		}
	}
	re, _ := compileRegex(`(\w)\1`, "")
	if got := fmt.Sprint(re.FindAllStringSubmatchIndex("aabbc", -1)); got != "[[0 2 0 1] [2 4 2 3]]" {
		t.Errorf("FindAll: %s", got)
	}
	if re, _ := compileRegex(`^a.c$`, "s"); re.re == nil {
		t.Error("an RE2 pattern did not compile on RE2")
	}
}
