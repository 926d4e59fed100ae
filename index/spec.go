package index

import (
	"fmt"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/text"
	"github.com/dumbodb/dumbodb/value"
)

// Error codes of index specifications (mongod's).
const (
	codeCannotCreateIndex   = mongoerr.CannotCreateIndex
	codeInvalidIndexSpecOpt = mongoerr.InvalidIndexSpecificationOption
	codeCannotIndexParallel = mongoerr.CannotIndexParallelArrays
	codeKeyTooLong          = mongoerr.Location17280
	maxExpireAfterSeconds   = int64(math.MaxInt32)
)

// Field is one field of a key pattern.
type Field struct {
	Path string
	Desc bool
	// Hashed: the field is {path: "hashed"}; its key is the value's hash
	// (hashed.go).
	Hashed bool
	// Geo is "2dsphere" or "2d" for a geo field: its keys are cells
	// (geo.go).
	Geo string
}

// Spec is a secondary index specification as listIndexes shows it.
type Spec struct {
	Name        string
	Key         bsoncore.Document
	Fields      []Field
	Unique      bool
	Sparse      bool
	Hidden      bool
	Partial     bsoncore.Document // nil: none
	ExpireAfter int64             // seconds; -1: not a TTL index
	Raw         bsoncore.Document // {v, key, name, options...}

	// PrepareUnique: a non-unique index that refuses new duplicate keys
	// (collMod's first step towards unique); existing duplicates stay.
	PrepareUnique bool

	// Text is set for a text index: its fields, weights and language.
	Text *text.Config
	// TextPrefix and TextSuffix are a compound text index's other key
	// fields, before and after the text part ({a: 1, body: "text", b: 1}).
	TextPrefix, TextSuffix []Field

	partial     Matcher
	coll        *value.Collation // nil: simple
	tp          *textParse
	textWeights bsoncore.Document
	textName    string
	geo         geoOptions
	wildProj    *wildcardProjection // nil: every path
	coverCache
}

// IDIndexName is the name of the implicit _id index.
const IDIndexName = "_id_"

// Matcher says whether a document belongs to a partial index.
type Matcher interface {
	Match(doc bsoncore.Document) bool
}

// FilterCompiler compiles a partialFilterExpression under the index's
// collation (nil: simple). The query language is package query's; index
// only asks the compiled filter, so it takes the compiler from its caller.
type FilterCompiler func(filter bsoncore.Document, coll *value.Collation) (Matcher, error)

// ParseSpec validates one createIndexes spec and returns it normalised
// (v: 2 first, then key and name, then the options in the order given).
// filters compiles a partial filter; it may be nil for a spec without one.
func ParseSpec(doc bsoncore.Document, filters FilterCompiler) (*Spec, error) {
	s := &Spec{ExpireAfter: -1}
	els, err := doc.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "invalid index specification: %v", err)
	}
	var opts []bsoncore.Element
	for _, el := range els {
		keep, err := s.parseOption(el, doc)
		if err != nil {
			return nil, err
		}
		if keep {
			opts = append(opts, el)
		}
	}
	if s.Key == nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'key' field is a required property of an index specification")
	}
	if s.IsID() {
		if err := checkIDSpec(doc); err != nil {
			return nil, err
		}
	}
	if err := s.checkCombination(); err != nil {
		return nil, err
	}
	if err := s.finishText(); err != nil {
		return nil, err
	}
	if err := s.checkWildcard(); err != nil {
		return nil, err
	}
	if err := s.checkCollation(); err != nil {
		return nil, err
	}
	if err := s.checkHashedOptions(); err != nil {
		return nil, err
	}
	if err := s.checkGeo(); err != nil {
		return nil, err
	}
	if err := s.compilePartial(filters); err != nil {
		return nil, err
	}
	if v, err := doc.LookupErr("name"); err == nil && v.StringValue() == "" {
		return nil, &LateSpecError{Err: mongoerr.New(codeCannotCreateIndex, "index name cannot be empty")}
	}
	if s.Name == "" {
		s.Name = DefaultName(s.Fields)
		if s.textName != "" {
			s.Name = s.textName
		}
	}
	s.Raw = s.normalised(opts)
	return s, nil
}

// LoadSpec reads a spec stored in the catalog (already validated).
func LoadSpec(raw bsoncore.Document, filters FilterCompiler) (*Spec, error) {
	s, err := ParseSpec(raw, filters)
	if err != nil {
		return nil, fmt.Errorf("stored index spec %s: %w", raw, err)
	}
	return s, nil
}

// parseOption reads one field of a spec and says whether it is kept as an
// option in the normalised spec.
func (s *Spec) parseOption(el bsoncore.Element, doc bsoncore.Document) (bool, error) {
	v := el.Value()
	switch el.Key() {
	case "key":
		return false, s.parseKey(v)
	case "name":
		name, ok := v.StringValueOK()
		if !ok {
			return false, mongoerr.New(mongoerr.TypeMismatch, "The field 'name' must be a string, not %s", v.Type)
		}
		s.Name = name // an empty one is refused last, as mongod does
		return false, nil
	case "v", "ns", "dropDups":
		return false, nil // version 2 is the only one; the others are legacy (dropDups is ignored since 3.0)
	case "background":
		var ignored bool // every build lets writers go on; mongod lists the field as given
		return true, boolOpt(v, "background", &ignored)
	case "unique":
		return true, boolOpt(v, "unique", &s.Unique)
	case "sparse":
		return true, boolOpt(v, "sparse", &s.Sparse)
	case "hidden":
		return true, boolOpt(v, "hidden", &s.Hidden)
	case "prepareUnique":
		return true, boolOpt(v, "prepareUnique", &s.PrepareUnique)
	case "partialFilterExpression":
		return true, s.parsePartial(v)
	case "expireAfterSeconds":
		return true, s.parseExpire(v)
	case "weights", "default_language", "language_override", "textIndexVersion":
		return false, s.parseTextOption(el.Key(), v)
	case "collation":
		return true, s.parseCollation(v)
	case "2dsphereIndexVersion", "bits", "min", "max":
		return true, s.parseGeoOption(el.Key(), v)
	case "wildcardProjection":
		return true, s.parseWildcardProjection(v)
	case "bucketSize", "storageEngine", "clustered":
		return false, mongoerr.New(mongoerr.NotImplemented, "index option '%s' is not supported by DumboDB", el.Key())
	}
	return false, mongoerr.New(codeInvalidIndexSpecOpt, "The field '%s' is not valid for an index specification. Specification: %s", el.Key(), doc)
}

func boolOpt(v bsoncore.Value, name string, dst *bool) error {
	switch v.Type {
	case bsoncore.TypeBoolean:
		*dst = v.Boolean()
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		*dst = value.Truthy(v)
	default:
		// mongod's message, its unclosed quote included
		return mongoerr.New(mongoerr.TypeMismatch, "The field '%s has value %s: %s, which is not convertible to bool", name, name, ShellValue(v))
	}
	return nil
}

func (s *Spec) parseKey(v bsoncore.Value) error {
	key, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "The field 'key' must be an object, not %s", v.Type)
	}
	els, _ := key.Elements()
	if len(els) == 0 {
		return mongoerr.New(codeCannotCreateIndex, "Index keys cannot be empty.")
	}
	seen := map[string]bool{}
	for _, el := range els {
		if t, ok := el.Value().StringValueOK(); ok && t == "text" {
			if err := s.parseTextKeyField(el.Key()); err != nil {
				return err
			}
			continue
		}
		if s.tp != nil && el.Key() == "_ftsx" {
			continue
		}
		f, err := parseKeyField(el)
		if err != nil {
			return err
		}
		if seen[f.Path] {
			return mongoerr.New(codeCannotCreateIndex, "Error in specification %s :: caused by :: duplicate field %q in key pattern", key, f.Path)
		}
		seen[f.Path] = true
		s.Fields = append(s.Fields, f)
	}
	if s.tp != nil {
		if err := s.splitTextKey(key); err != nil {
			return err
		}
	}
	if len(s.Fields) > 1 {
		for _, f := range s.Fields {
			if f.Path == "$**" || strings.HasSuffix(f.Path, ".$**") {
				return mongoerr.New(mongoerr.NotImplemented, "compound wildcard indexes are not supported by DumboDB")
			}
		}
	}
	s.Key = append(bsoncore.Document(nil), key...)
	if err := checkHashed(s.Fields); err != nil {
		return err
	}
	return nil
}

func parseKeyField(el bsoncore.Element) (Field, error) {
	path, v := el.Key(), el.Value()
	if path == "" || strings.HasPrefix(path, ".") || strings.HasSuffix(path, ".") || strings.Contains(path, "..") {
		return Field{}, mongoerr.New(codeCannotCreateIndex, "Index key contains an illegal field name: %q", path)
	}
	if strings.HasPrefix(path, "$") || strings.Contains(path, ".$") {
		if path == "$**" || (strings.HasSuffix(path, ".$**") && !strings.Contains(strings.TrimSuffix(path, ".$**"), "$")) {
			f, ok := v.AsFloat64OK()
			if !ok || f == 0 {
				return Field{}, mongoerr.New(codeCannotCreateIndex, "Values in the index key pattern can only be positive or negative numbers, got %s: %s", path, v)
			}
			return Field{Path: path, Desc: f < 0}, nil
		}
		return Field{}, mongoerr.New(codeCannotCreateIndex, "Index key contains an illegal field name: field name starts with '$'.")
	}
	if s, ok := v.StringValueOK(); ok {
		switch s {
		case "hashed":
			return Field{Path: path, Hashed: true}, nil
		case Geo2D, Geo2DSphere:
			return Field{Path: path, Geo: s}, nil
		case "geoHaystack": // removed in mongod 5.0
			return Field{}, mongoerr.New(codeCannotCreateIndex, "GeoHaystack indexes cannot be created in version 4.9 and above")
		}
		return Field{}, mongoerr.New(codeCannotCreateIndex, "Unknown index plugin '%s'", s)
	}
	f, ok := v.AsFloat64OK()
	if v.Type == bsoncore.TypeDecimal128 { // AsFloat64OK does not read decimals
		if e := value.ExactNumber(v); e.Rat != nil {
			f, _ = e.Rat.Float64()
			ok = true
		}
	}
	if !ok || f == 0 || math.IsNaN(f) {
		return Field{}, mongoerr.New(codeCannotCreateIndex, "Values in the index key pattern can only be positive or negative numbers, got %s: %s", path, v)
	}
	return Field{Path: path, Desc: f < 0}, nil
}

// compilePartial compiles the partial filter, which compares strings with
// the index's collation as on mongod.
func (s *Spec) compilePartial(filters FilterCompiler) error {
	if s.Partial == nil {
		return nil
	}
	if filters == nil {
		return fmt.Errorf("index %s: a partial filter needs a filter compiler", s.Name)
	}
	m, err := filters(s.Partial, s.coll)
	if err != nil {
		return err
	}
	s.partial = m
	return nil
}

func (s *Spec) parsePartial(v bsoncore.Value) error {
	d, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "The field 'partialFilterExpression' must be an object, not %s", v.Type)
	}
	s.Partial = append(bsoncore.Document(nil), d...) // compiled once the collation is known
	return nil
}

// parseCollation reads the collation option as mongod does: an object,
// not empty, a valid collation; {locale: "simple"} is no collation.
func (s *Spec) parseCollation(v bsoncore.Value) error {
	d, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "The field 'collation' must be an object, but got %s", v.Type)
	}
	if len(d) <= 5 {
		return mongoerr.New(mongoerr.BadValue, "The field 'collation' cannot be an empty object.")
	}
	c, err := value.ParseCollation(d)
	if err != nil {
		return err
	}
	s.coll = c
	return nil
}

// checkCollation refuses a collation on the index kinds that cannot have
// one: text (as mongod), wildcard (not yet in DumboDB) and _id (which has
// the collection's, and DumboDB's collections have the simple one).
func (s *Spec) checkCollation() error {
	if s.coll == nil {
		return nil
	}
	_, wild := s.Wildcard()
	switch {
	case s.Text != nil:
		return mongoerr.New(codeCannotCreateIndex, "Index type 'text' does not support collation: %s", ShellDoc(s.coll.Expanded()))
	case wild:
		return mongoerr.New(mongoerr.NotImplemented, "wildcard indexes with a collation are not supported by DumboDB")
	case s.IsID():
		return mongoerr.New(mongoerr.BadValue, "The _id index must have the same collation as the collection. Index collation: %s, collection collation: { locale: \"simple\" }", ShellDoc(s.coll.Expanded()))
	}
	return nil
}

// Collation is the index's collation (nil: simple): string keys are
// encoded by its sort keys.
func (s *Spec) Collation() *value.Collation { return s.coll }

func (s *Spec) parseExpire(v bsoncore.Value) error {
	f, ok := v.AsFloat64OK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s'.", v.Type)
	}
	if math.IsNaN(f) || f < 0 || f > float64(maxExpireAfterSeconds) {
		return mongoerr.New(codeCannotCreateIndex, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
	}
	s.ExpireAfter = int64(f)
	return nil
}

// checkCombination rejects options that cannot go together.
func (s *Spec) checkCombination() error {
	switch {
	case s.Unique && s.PrepareUnique:
		return mongoerr.New(codeCannotCreateIndex, "Index with \"unique\" and \"prepareUnique\" options set to true is not supported")
	case s.Sparse && s.Partial != nil:
		return mongoerr.New(codeCannotCreateIndex, "cannot mix \"partialFilterExpression\" and \"sparse\" options")
	case s.ExpireAfter >= 0 && len(s.Fields) > 1:
		return mongoerr.New(codeCannotCreateIndex, "TTL indexes are single-field indexes, compound indexes do not support TTL")
	}
	return nil
}

// idIndexFields are the fields an _id index spec may have (mongod's
// allowedIdIndexFieldNames; _id from legacy inserts into system.indexes).
var idIndexFields = map[string]bool{"key": true, "name": true, "v": true, "collation": true, "ns": true, "_id": true}

// checkIDSpec refuses an option on the _id index, naming the first such
// field of the spec and the spec as mongod shows it by then.
func checkIDSpec(doc bsoncore.Document) error {
	els, _ := doc.Elements()
	for _, el := range els {
		if !idIndexFields[el.Key()] {
			return &LateSpecError{Bare: true, Err: mongoerr.New(codeInvalidIndexSpecOpt,
				"The field '%s' is not valid for an _id index specification. Specification: %s", el.Key(), ShellDoc(WithVersion(doc)))}
		}
	}
	return nil
}

// LateSpecError is an error mongod finds in an index spec only after it
// has read each field and given the spec its version (WithVersion): an
// option the _id index cannot have (Bare: mongod reports the message
// alone, which names the spec), or what its index catalog refuses (an
// empty name), reported like the errors found while reading the fields
// but naming the spec with its version.
type LateSpecError struct {
	Err  error
	Bare bool
}

func (e *LateSpecError) Error() string { return e.Err.Error() }
func (e *LateSpecError) Unwrap() error { return e.Err }

// WithVersion is a createIndexes spec as mongod shows it once it has read
// it: with v: 2 at the end when it gave no version.
func WithVersion(doc bsoncore.Document) bsoncore.Document {
	if _, err := doc.LookupErr("v"); err == nil {
		return doc
	}
	b := bsoncore.NewDocumentBuilder()
	els, _ := doc.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendInt32("v", 2).Build()
}

// RefusesDuplicates reports whether a write may not give a key of the
// index to a second document: the index is unique or prepareUnique.
func (s *Spec) RefusesDuplicates() bool { return s.Unique || s.PrepareUnique }

// IsID reports the {_id: 1} key pattern.
func (s *Spec) IsID() bool {
	return len(s.Fields) == 1 && s.Fields[0].Path == "_id" && !s.Fields[0].Desc
}

func (s *Spec) normalised(opts []bsoncore.Element) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", s.Key).AppendString("name", s.Name)
	for _, el := range opts {
		if el.Key() == "collation" {
			// mongod lists the collation with every field; simple: none.
			if s.coll != nil {
				b.AppendDocument("collation", s.coll.Expanded())
			}
			continue
		}
		b.AppendValue(el.Key(), el.Value())
	}
	if s.Text != nil {
		s.textOptions(b)
	}
	s.geoNormalised(b)
	return b.Build()
}

// DefaultName is mongod's generated index name: field_dir joined by "_".
func DefaultName(fields []Field) string {
	parts := make([]string, 0, 2*len(fields))
	for _, f := range fields {
		dir := "1"
		switch {
		case f.Hashed:
			dir = "hashed"
		case f.Geo != "":
			dir = f.Geo
		case f.Desc:
			dir = "-1"
		}
		parts = append(parts, f.Path, dir)
	}
	return strings.Join(parts, "_")
}

// SameKey reports whether two specs have the same key pattern (directions
// compared by sign, as mongod does).
func (s *Spec) SameKey(o *Spec) bool {
	if len(s.Fields) != len(o.Fields) {
		return false
	}
	for i := range s.Fields {
		if s.Fields[i] != o.Fields[i] {
			return false
		}
	}
	return true
}

// SameOptions reports whether two specs with the same key would build the
// same index.
func (s *Spec) SameOptions(o *Spec) bool {
	return s.Unique == o.Unique && s.PrepareUnique == o.PrepareUnique && s.Sparse == o.Sparse && s.ExpireAfter == o.ExpireAfter && s.coll.Equal(o.coll) &&
		string(s.Partial) == string(o.Partial) && string(s.textWeights) == string(o.textWeights) &&
		(s.Text == nil) == (o.Text == nil) && (s.Text == nil || s.Text.Language == o.Text.Language && s.Text.LanguageOverride == o.Text.LanguageOverride) &&
		s.Grid() == o.Grid()
}

// knownOptions are the spec fields ParseSpec understands (supported or
// refused); ignoreUnknownIndexOptions drops every other field.
var knownOptions = map[string]bool{
	"key": true, "name": true, "v": true, "ns": true, "background": true, "dropDups": true, "unique": true, "sparse": true,
	"hidden": true, "partialFilterExpression": true, "expireAfterSeconds": true, "collation": true,
	"weights": true, "default_language": true, "language_override": true, "textIndexVersion": true,
	"2dsphereIndexVersion": true, "bits": true, "min": true, "max": true, "bucketSize": true,
	"wildcardProjection": true, "storageEngine": true, "clustered": true, "prepareUnique": true,
}

// StripUnknownOptions removes the fields of a spec that are not index
// options (createIndexes' ignoreUnknownIndexOptions).
func StripUnknownOptions(doc bsoncore.Document) bsoncore.Document {
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		if knownOptions[el.Key()] {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// entryIndependentOptions are the spec fields an index's entries do not
// depend on: collMod may change them without a rebuild. A unique index's
// entries are a non-unique one's (key fields then _id), so unique and
// prepareUnique are among them; whoever sets unique checks the entries
// for duplicates first.
var entryIndependentOptions = map[string]bool{"hidden": true, "expireAfterSeconds": true, "unique": true, "prepareUnique": true}

// SameEntries reports whether indexes a and b have the same entries for
// every document: their specs differ at most in hidden,
// expireAfterSeconds, unique and prepareUnique.
func SameEntries(a, b *Spec) bool {
	return string(withoutEntryIndependent(a.Raw)) == string(withoutEntryIndependent(b.Raw))
}

func withoutEntryIndependent(raw bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	els, _ := raw.Elements()
	for _, el := range els {
		if !entryIndependentOptions[el.Key()] {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	return b.Build()
}

// TopFields names the top-level fields the index's entries depend on, so
// that a writer may compute them from a document holding only those
// fields. ok is false when they cannot be named: a wildcard over the
// whole document, a text index (its language field and weights) or a
// partial filter.
func (s *Spec) TopFields() (names []string, ok bool) {
	if s.Text != nil || s.Partial != nil {
		return nil, false
	}
	for _, f := range s.Fields {
		top, _, _ := strings.Cut(f.Path, ".")
		if strings.HasPrefix(top, "$") {
			return nil, false
		}
		names = append(names, top)
	}
	return names, true
}
