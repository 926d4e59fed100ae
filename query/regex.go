package query

import (
	"regexp"
	"time"

	"github.com/dlclark/regexp2/v2"
)

// pcre is a compiled MongoDB regular expression. mongod's regexes are
// PCRE. A pattern Go's RE2 engine takes compiles there: linear time, and
// the same matches for the syntax both share. One that needs PCRE's
// backtracking features (lookahead, lookbehind, backreferences,
// possessive quantifiers, atomic groups) compiles with regexp2 instead.
// Each regexp2 match is bounded by regexBacktrackTimeout.
type pcre struct {
	re *regexp.Regexp  // RE2, when the pattern compiles there
	bt *regexp2.Regexp // backtracking, otherwise
}

// regexBacktrackTimeout bounds one backtracking match: a pattern of
// catastrophic backtracking gives up rather than hold a core.
const regexBacktrackTimeout = time.Second

// compilePCRE compiles pattern with MongoDB's options already validated:
// flags for RE2's inline form, and the same for regexp2.
func compilePCRE(pattern, re2Flags string, extended bool) (*pcre, error) {
	p := pattern
	if extended {
		p = stripExtended(p)
	}
	if re2Flags != "" {
		p = "(?" + re2Flags + ")" + p
	}
	if re, err := regexp.Compile(p); err == nil {
		return &pcre{re: re}, nil
	}
	var opts regexp2.RegexOptions
	for _, c := range re2Flags {
		switch c {
		case 'i':
			opts |= regexp2.IgnoreCase
		case 'm':
			opts |= regexp2.Multiline
		case 's':
			opts |= regexp2.Singleline
		}
	}
	if extended {
		opts |= regexp2.IgnorePatternWhitespace
	}
	bt, err := regexp2.Compile(pattern, opts)
	if err != nil {
		return nil, err
	}
	bt.MatchTimeout = regexBacktrackTimeout
	return &pcre{bt: bt}, nil
}

// Match reports whether b holds a match.
func (p *pcre) Match(b []byte) bool {
	if p.re != nil {
		return p.re.Match(b)
	}
	return p.MatchString(string(b))
}

// MatchString reports whether s holds a match; a match that times out is
// no match (the pattern's own limit, as PCRE's match limit).
func (p *pcre) MatchString(s string) bool {
	if p.re != nil {
		return p.re.MatchString(s)
	}
	ok, err := p.bt.MatchString(s)
	return err == nil && ok
}

// FindStringSubmatchIndex is regexp's: byte offsets of the match and its
// groups (-1 for a group that did not take part), nil without a match.
func (p *pcre) FindStringSubmatchIndex(s string) []int {
	if p.re != nil {
		return p.re.FindStringSubmatchIndex(s)
	}
	m, err := p.bt.FindStringMatch(s)
	if err != nil || m == nil {
		return nil
	}
	return matchIndexes(m)
}

// FindAllStringSubmatchIndex is regexp's, n < 0 for every match.
func (p *pcre) FindAllStringSubmatchIndex(s string, n int) [][]int {
	if p.re != nil {
		return p.re.FindAllStringSubmatchIndex(s, n)
	}
	var out [][]int
	m, err := p.bt.FindStringMatch(s)
	for err == nil && m != nil && (n < 0 || len(out) < n) {
		out = append(out, matchIndexes(m))
		m, err = p.bt.FindNextMatch(m)
	}
	return out
}

// matchIndexes turns a regexp2 match into regexp's index form.
func matchIndexes(m *regexp2.Match) []int {
	groups := m.Groups()
	out := make([]int, 0, 2*len(groups))
	for _, g := range groups {
		if len(g.Captures) == 0 {
			out = append(out, -1, -1)
			continue
		}
		start, length := g.ByteRange()
		out = append(out, start, start+length)
	}
	return out
}
