package query

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// regexLeaf matches strings and symbols by pattern, and regex values that
// are the identical regex (as mongod does).
type regexLeaf struct {
	re               *pcre
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

// compileRegex compiles a PCRE pattern with MongoDB's options (regex.go
// picks the engine): i, m and s are flags, x ignores whitespace and
// comments; u and l have no effect (UTF-8 is the only mode).
func compileRegex(pattern, options string) (*pcre, error) {
	flags, extended := "", false
	for _, c := range options {
		switch c {
		case 'i', 'm', 's':
			if !strings.ContainsRune(flags, c) {
				flags += string(c)
			}
		case 'x':
			extended = true
		case 'u', 'l':
		default:
			return nil, mongoerr.New(mongoerr.Location51108, "invalid flag in regex options: %c", c)
		}
	}
	re, err := compilePCRE(pattern, flags, extended)
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
