package value

import (
	"bytes"
	"strings"
	"sync"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// Collation is a locale-aware string ordering (ICU semantics approximated
// by golang.org/x/text/collate). A nil *Collation is the simple collation:
// binary comparison of UTF-8 bytes, which is what every hot path uses.
type Collation struct {
	spec bsoncore.Document // as given, for error messages and replies
	full bsoncore.Document // every field with its value or default, as mongod reports it

	// byKey compares strings by their sort keys: x/text's Compare does not
	// implement alternate "shifted", its Key does.
	byKey bool
	// identical (strength 5) breaks ties of the collation by the UTF-8 bytes.
	identical bool

	// x/text collators keep internal buffers, so one Collation shared by a
	// cursor's getMore calls (or by an index's key generation) must
	// serialise its comparisons and keys.
	mu         sync.Mutex
	col        *collate.Collator
	buf        collate.Buffer
	keyA, keyB []byte
}

// icuVersion is the collator version mongod 8.0 reports (ICU 57.1).
const icuVersion = "57.1"

// codeIncompatibleCollationVersion is mongod's IncompatibleCollationVersion.
const codeIncompatibleCollationVersion = mongoerr.IncompatibleCollationVersion

// collationFields are the fields of a collation document MongoDB accepts.
var collationFields = map[string]bool{
	"locale": true, "caseLevel": true, "caseFirst": true, "strength": true,
	"numericOrdering": true, "alternate": true, "maxVariable": true,
	"normalization": true, "backwards": true, "version": true,
}

// collationSpec is a parsed collation document with mongod's defaults.
type collationSpec struct {
	locale                                          string
	caseLevel, numeric, normalization, backwards    bool
	caseFirst, alternate, maxVariable               string
	strength                                        int
	hasCaseFirst, hasAlternate, hasNormal, hasBackw bool
}

// ParseCollation validates a collation document as mongod does. It returns
// nil for the simple collation ({locale: "simple"}).
func ParseCollation(doc bsoncore.Document) (*Collation, error) {
	cs := collationSpec{strength: 3, caseFirst: "off", alternate: "non-ignorable", maxVariable: "punct"}
	hasLocale := false
	var version string
	hasVersion := false
	it := NewIter(doc)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		key := string(k)
		if !collationFields[key] {
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field 'collation.%s' is an unknown field.", key)
		}
		var err error
		switch key {
		case "locale":
			if v.Type != bsoncore.TypeString {
				return nil, collationType(key, v, "string")
			}
			cs.locale, hasLocale = v.StringValue(), true
		case "strength":
			if !IsNumber(v) {
				return nil, collationType(key, v, "int")
			}
			cs.strength = int(ToFloat(v))
			if cs.strength < 1 || cs.strength > 5 || float64(cs.strength) != ToFloat(v) {
				return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'strength' is not a valid value.", FormatNumber(v))
			}
		case "numericOrdering":
			cs.numeric, err = collationBool(key, v)
		case "caseLevel":
			cs.caseLevel, err = collationBool(key, v)
		case "normalization":
			cs.normalization, err = collationBool(key, v)
			cs.hasNormal = true
		case "backwards":
			cs.backwards, err = collationBool(key, v)
			cs.hasBackw = true
		case "caseFirst":
			cs.caseFirst, err = collationEnum(key, v, "upper", "lower", "off")
			cs.hasCaseFirst = true
		case "alternate":
			cs.alternate, err = collationEnum(key, v, "non-ignorable", "shifted")
			cs.hasAlternate = true
		case "maxVariable":
			cs.maxVariable, err = collationEnum(key, v, "punct", "space")
		case "version":
			if v.Type != bsoncore.TypeString {
				return nil, collationType(key, v, "string")
			}
			version, hasVersion = v.StringValue(), true
		}
		if err != nil {
			return nil, err
		}
	}
	if !hasLocale {
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'collation.locale' is missing but a required field")
	}
	if cs.locale == "simple" {
		if len(doc) > len(bsoncore.NewDocumentBuilder().AppendString("locale", "simple").Build()) {
			return nil, mongoerr.New(mongoerr.BadValue, "If 'locale' is set to 'simple', no other fields may be specified")
		}
		return nil, nil
	}
	tag, err := parseLocale(cs.locale, doc)
	if err != nil {
		return nil, err
	}
	if hasVersion && version != icuVersion {
		return nil, mongoerr.New(codeIncompatibleCollationVersion, "Requested collation version %s but the only available collator version was %s. Requested collation spec: %s",
			version, icuVersion, Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	cs.localeDefaults()
	full := cs.document()
	switch {
	case cs.backwards && cs.strength == 1:
		return nil, mongoerr.New(mongoerr.BadValue, "'backwards' is invalid with 'strength' of 1 in: %s", Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: full}))
	case cs.caseFirst != "off" && !cs.caseLevel && cs.strength < 3:
		return nil, mongoerr.New(mongoerr.BadValue, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: %s", Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: full}))
	}
	c := &Collation{spec: doc, full: full, col: cs.collator(tag)}
	c.byKey = cs.alternate == "shifted"
	c.identical = cs.strength == 5
	return c, nil
}

// parseLocale checks an ICU locale id ("en", "en_US", "zh@collation=pinyin")
// and returns it as a language tag. Locales x/text has no collation data
// for are refused, as mongod refuses those ICU does not know.
func parseLocale(locale string, doc bsoncore.Document) (language.Tag, error) {
	bad := func() (language.Tag, error) {
		return language.Und, mongoerr.New(mongoerr.BadValue, "Field 'locale' is invalid in: %s", Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	if locale == "" {
		return language.Und, mongoerr.New(mongoerr.BadValue, "Field 'locale' cannot be the empty string in: %s", Format(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}))
	}
	if strings.ContainsAny(locale, "-\x00") {
		return bad()
	}
	tag, err := language.Parse(localeTag(locale))
	if err != nil {
		return bad()
	}
	if _, _, conf := supportedLocales.Match(tag); conf == language.No {
		return bad()
	}
	return tag, nil
}

var supportedLocales = language.NewMatcher(collate.Supported())

// localeDefaults applies the defaults ICU's locale data gives a few
// locales, for the options not given.
func (cs *collationSpec) localeDefaults() {
	base := cs.locale
	if i := strings.IndexAny(base, "_@"); i >= 0 {
		base = base[:i]
	}
	if !cs.hasBackw && strings.HasPrefix(cs.locale, "fr_CA") {
		cs.backwards = true
	}
	if !cs.hasCaseFirst && (base == "da" || base == "mt") {
		cs.caseFirst = "upper"
	}
	if !cs.hasAlternate && base == "th" {
		cs.alternate = "shifted"
	}
}

// document is the collation as mongod reports it (listIndexes, explain):
// every field, in mongod's order.
func (cs *collationSpec) document() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendString("locale", cs.locale).
		AppendBoolean("caseLevel", cs.caseLevel).
		AppendString("caseFirst", cs.caseFirst).
		AppendInt32("strength", int32(cs.strength)).
		AppendBoolean("numericOrdering", cs.numeric).
		AppendString("alternate", cs.alternate).
		AppendString("maxVariable", cs.maxVariable).
		AppendBoolean("normalization", cs.normalization).
		AppendBoolean("backwards", cs.backwards).
		AppendString("version", icuVersion).
		Build()
}

// collator builds the x/text collator. caseFirst, maxVariable and
// normalization have no x/text counterpart (x/text always normalises).
func (cs *collationSpec) collator(tag language.Tag) *collate.Collator {
	var opts []collate.Option
	switch {
	case cs.strength == 1 && !cs.caseLevel:
		opts = append(opts, collate.IgnoreDiacritics, collate.IgnoreCase)
	case cs.strength == 1:
		opts = append(opts, collate.IgnoreDiacritics)
	case cs.strength == 2:
		opts = append(opts, collate.IgnoreCase)
	}
	if cs.numeric {
		opts = append(opts, collate.Numeric)
	}
	var ext []string
	if cs.backwards {
		ext = append(ext, "kb-true")
	}
	if cs.alternate == "shifted" {
		ext = append(ext, "ka-shifted")
		if cs.strength >= 4 {
			ext = append(ext, "ks-level4")
		}
	}
	if len(ext) > 0 {
		if t, err := language.Parse(tag.String() + "-u-" + strings.Join(ext, "-")); err == nil {
			opts = append(opts, collate.OptionsFromTag(t))
		}
	}
	return collate.New(tag, opts...)
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
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collation.%s' is the wrong type '%s', expected type '%s'", field, TypeName(v.Type), want)
}

func collationBool(field string, v bsoncore.Value) (bool, error) {
	if v.Type != bsoncore.TypeBoolean {
		return false, collationType(field, v, "bool")
	}
	return v.Boolean(), nil
}

func collationEnum(field string, v bsoncore.Value, allowed ...string) (string, error) {
	if v.Type != bsoncore.TypeString {
		return "", collationType(field, v, "string")
	}
	s := v.StringValue()
	for _, a := range allowed {
		if s == a {
			return s, nil
		}
	}
	return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'collation.%s' is not a valid value.", s, field)
}

// Spec returns the collation document as given (nil for simple).
func (c *Collation) Spec() bsoncore.Document {
	if c == nil {
		return nil
	}
	return c.spec
}

// Expanded returns the collation with every field, defaults filled in, as
// mongod reports it in listIndexes (nil for simple).
func (c *Collation) Expanded() bsoncore.Document {
	if c == nil {
		return nil
	}
	return c.full
}

// Equal reports whether two collations order strings the same way because
// they are the same collation (nil is the simple collation).
func (c *Collation) Equal(o *Collation) bool {
	if c == nil || o == nil {
		return c == o
	}
	return c == o || bytes.Equal(c.full, o.full)
}

// AppendKey appends the index key of the string s under the collation:
// its sort key with 0x00 escaped as 0x00 0xFF and a 0x00 0x00 terminator,
// so that bytes.Compare of two keys is the collation's order of the
// strings and strings the collation finds equal have equal keys.
func (c *Collation) AppendKey(dst, s []byte) []byte {
	c.mu.Lock()
	dst = c.appendKeyLocked(dst, s)
	c.mu.Unlock()
	return dst
}

func (c *Collation) appendKeyLocked(dst, s []byte) []byte {
	k := c.col.Key(&c.buf, s)
	dst = AppendEscaped(dst, k)
	c.buf.Reset()
	if c.identical {
		dst = AppendEscaped(dst, s)
	}
	return dst
}

// AppendEscaped writes b with 0x00 escaped as 0x00 0xFF and a 0x00 0x00
// terminator, so that a string sorts before its extensions: the string
// encoding of index keys, collated (AppendKey) or not.
func AppendEscaped(dst, b []byte) []byte {
	for _, ch := range b {
		dst = append(dst, ch)
		if ch == 0 {
			dst = append(dst, 0xFF)
		}
	}
	return append(dst, 0, 0)
}

func (c *Collation) compareStrings(a, b []byte) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byKey {
		c.keyA = c.appendKeyLocked(c.keyA[:0], a)
		c.keyB = c.appendKeyLocked(c.keyB[:0], b)
		return bytes.Compare(c.keyA, c.keyB)
	}
	if r := c.col.Compare(a, b); r != 0 || !c.identical {
		return r
	}
	return bytes.Compare(a, b)
}

// CompareCollated orders two values as Compare does, comparing strings
// (also inside documents and arrays) with c; nil c is Compare.
func CompareCollated(a, b bsoncore.Value, c *Collation) int { return CompareWith(a, b, c) }
