package query

import (
	"sync"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
)

// Collation is a locale-aware string ordering (ICU semantics approximated
// by golang.org/x/text/collate). A nil *Collation is the simple collation:
// binary comparison of UTF-8 bytes, which is what every hot path uses.
type Collation struct {
	spec bsoncore.Document // as given, for error messages and replies

	// x/text collators keep internal buffers, so one Collation shared by a
	// cursor's getMore calls must serialise its comparisons.
	mu  sync.Mutex
	col *collate.Collator
}

// collationFields are the fields of a collation document MongoDB accepts.
var collationFields = map[string]bool{
	"locale": true, "caseLevel": true, "caseFirst": true, "strength": true,
	"numericOrdering": true, "alternate": true, "maxVariable": true,
	"normalization": true, "backwards": true, "version": true,
}

// ParseCollation validates a collation document. It returns nil for the
// simple collation ({locale: "simple"}).
func ParseCollation(doc bsoncore.Document) (*Collation, error) {
	var locale string
	strength := 3
	numeric, caseLevel := false, false
	hasLocale := false
	it := newIter(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			break
		}
		key := string(k)
		if !collationFields[key] {
			return nil, mongoerr.New(mongoerr.Code(40415), "BSON field 'collation.%s' is an unknown field.", key)
		}
		var err error
		switch key {
		case "locale":
			if v.Type != bsoncore.TypeString {
				return nil, collationType(key, v, "string")
			}
			locale, hasLocale = v.StringValue(), true
		case "strength":
			if !isNumber(v) {
				return nil, collationType(key, v, "int")
			}
			strength = int(toFloat(v))
			if strength < 1 || strength > 5 || float64(strength) != toFloat(v) {
				return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'strength' is not a valid value.", formatNumber(v))
			}
		case "numericOrdering":
			numeric, err = collationBool(key, v)
		case "caseLevel":
			caseLevel, err = collationBool(key, v)
		}
		if err != nil {
			return nil, err
		}
	}
	if !hasLocale {
		return nil, mongoerr.New(mongoerr.Code(40414), "BSON field 'collation.locale' is missing but a required field")
	}
	if locale == "simple" {
		if len(doc) > len(bsoncore.NewDocumentBuilder().AppendString("locale", "simple").Build()) {
			return nil, mongoerr.New(mongoerr.BadValue, "If 'locale' is set to 'simple', no other fields may be specified")
		}
		return nil, nil
	}
	tag, err := language.Parse(localeTag(locale))
	if err != nil || locale == "" {
		return nil, mongoerr.New(mongoerr.BadValue, "Field 'locale' is invalid in: %s", formatValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	var opts []collate.Option
	switch {
	case strength == 1 && !caseLevel:
		opts = append(opts, collate.IgnoreDiacritics, collate.IgnoreCase)
	case strength == 1:
		opts = append(opts, collate.IgnoreDiacritics)
	case strength == 2:
		opts = append(opts, collate.IgnoreCase)
	}
	if numeric {
		opts = append(opts, collate.Numeric)
	}
	return &Collation{spec: doc, col: collate.New(tag, opts...)}, nil
}

// localeTag maps ICU locale ids ("en_US", "zh@collation=pinyin") to BCP 47.
func localeTag(locale string) string {
	b := []byte(locale)
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
		if c == '@' {
			b = b[:i]
			break
		}
	}
	return string(b)
}

func collationType(field string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collation.%s' is the wrong type '%s', expected type '%s'", field, typeName(v.Type), want)
}

func collationBool(field string, v bsoncore.Value) (bool, error) {
	if v.Type != bsoncore.TypeBoolean {
		return false, collationType(field, v, "bool")
	}
	return v.Boolean(), nil
}

// Spec returns the collation document as given (nil for simple).
func (c *Collation) Spec() bsoncore.Document {
	if c == nil {
		return nil
	}
	return c.spec
}

func (c *Collation) compareStrings(a, b []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.col.Compare(a, b)
}
