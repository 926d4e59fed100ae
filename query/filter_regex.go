package query

import (
	"regexp"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/value"
)

// regexLeaf matches strings and symbols by pattern, and regex values that
// are the identical regex (as mongod does).
type regexLeaf struct {
	re               *regexp.Regexp
	pattern, options string
}

func (r *regexLeaf) matchValue(v bsoncore.Value, _ value.VisitKind) bool {
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeSymbol:
		return r.re.Match(value.RawString(v))
	case bsoncore.TypeRegex:
		p, o := v.Regex()
		return p == r.pattern && o == r.options
	}
	return false
}

func regexLeafFromValue(v bsoncore.Value) (*regexLeaf, error) {
	p, o := v.Regex()
	return newRegexLeaf(p, o)
}

func newRegexLeaf(pattern, options string) (*regexLeaf, error) {
	re, err := compileRegex(pattern, options)
	if err != nil {
		return nil, err
	}
	return &regexLeaf{re: re, pattern: pattern, options: options}, nil
}

// compileRegex translates a PCRE pattern and MongoDB options to Go's RE2.
// i, m and s map to inline flags; x is applied by stripping whitespace and
// comments, which RE2 lacks. PCRE-only syntax (lookaround, backreferences)
// is rejected as an invalid regex rather than silently mis-matched.
func compileRegex(pattern, options string) (*regexp.Regexp, error) {
	flags := ""
	for _, c := range options {
		switch c {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, c) {
				flags += string(c)
			}
		case 'x':
			pattern = stripExtended(pattern)
		case 'u', 'l':
			// UTF-8 is RE2's only mode; locale-dependence has no equivalent.
		default:
			return nil, mongoerr.New(mongoerr.Location51108, "invalid flag in regex options: %c", c)
		}
	}
	if flags != "" {
		pattern = "(?" + flags + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, mongoerr.New(mongoerr.Location51091, "Regular expression is invalid: %v", err)
	}
	return re, nil
}

// stripExtended removes unescaped whitespace and #-comments outside
// character classes, which is what PCRE's extended mode ignores.
func stripExtended(p string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			b.WriteByte(p[i+1])
			i++
			continue
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			continue
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
