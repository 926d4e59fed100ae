package index

import (
	"bytes"
	"math"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/text"
)

// Text indexes: the key pattern is stored as mongod shows it, the text
// fields replaced by {_fts: "text", _ftsx: 1} between a compound index's
// prefix and suffix fields, with the text fields in weights. Entries are
// one per distinct term of a document's indexed strings: the prefix
// fields' keys, the encoded term (a string key), the encoded score
// contribution (a double key), the suffix fields' keys, then the _id key.
// A $text query looks terms up under the prefix values its filter pins
// by equality, so those are required (plan/text_scans.go).

// maxTextWeight bounds a field's weight (exclusive), as mongod.
const maxTextWeight = 100000

// textParse collects a text index's parts while its spec is read.
type textParse struct {
	textAt    int      // index in Fields where the text part sits (-1: none yet)
	keyFields []string // fields given "text" in the key
	textNames []string // their parts of the default name
	fts       bool     // the key names _fts (fields come from weights)
	weights   bsoncore.Value
	language  *text.Language
	override  string
	version   int32
}

// IsText reports a text index.
func (s *Spec) IsText() bool { return s.Text != nil }

func (s *Spec) textParse() *textParse {
	if s.tp == nil {
		s.tp = &textParse{textAt: -1}
	}
	return s.tp
}

// parseTextKeyField reads a {field: "text"} of the key pattern.
func (s *Spec) parseTextKeyField(field string) error {
	tp := s.textParse()
	if tp.textAt >= 0 && len(s.Fields) > tp.textAt {
		return mongoerr.New(codeCannotCreateIndex, "'text' fields in index must all be adjacent")
	}
	tp.textAt = len(s.Fields)
	tp.textNames = append(tp.textNames, field, "text")
	switch {
	case field == "_fts":
		tp.fts = true
	case field == "_ftsx":
		return mongoerr.New(codeCannotCreateIndex, "expecting _ftsx:1")
	case field != text.Wildcard && (strings.HasPrefix(field, "$") || strings.Contains(field, ".$")):
		return mongoerr.New(codeCannotCreateIndex, "weight cannot have path component with $ prefix")
	default:
		tp.keyFields = append(tp.keyFields, field)
	}
	return nil
}

// splitTextKey moves a compound text index's other fields, read into
// Fields, to TextPrefix and TextSuffix; mongod allows only 1 and -1 there.
func (s *Spec) splitTextKey(key bsoncore.Document) error {
	tp := s.tp
	if tp.textAt < 0 {
		return nil // text options without a text field: finishText refuses them
	}
	for _, f := range s.Fields {
		if f.Path == "_fts" || f.Path == "_ftsx" {
			return mongoerr.New(codeCannotCreateIndex, "text index with reserved fields _fts/_ftsx not allowed")
		}
		if n, ok := key.Lookup(f.Path).AsFloat64OK(); !ok || (int32(n) != 1 && int32(n) != -1) {
			return mongoerr.New(codeCannotCreateIndex, "expected value 1 or -1 for non-text key in compound index")
		}
	}
	s.TextPrefix = append([]Field(nil), s.Fields[:tp.textAt]...)
	s.TextSuffix = append([]Field(nil), s.Fields[tp.textAt:]...)
	names := []string{}
	if len(s.TextPrefix) > 0 {
		names = append(names, DefaultName(s.TextPrefix))
	}
	names = append(names, tp.textNames...)
	if len(s.TextSuffix) > 0 {
		names = append(names, DefaultName(s.TextSuffix))
	}
	s.textName = strings.Join(names, "_")
	return nil
}

func (s *Spec) parseTextOption(key string, v bsoncore.Value) error {
	tp := s.textParse()
	switch key {
	case "weights":
		if _, ok := v.DocumentOK(); !ok && !(v.Type == bsoncore.TypeString && v.StringValue() == text.Wildcard) {
			return mongoerr.New(codeCannotCreateIndex, "text index option 'weights' must be an object")
		}
		tp.weights = v
	case "default_language":
		l, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(codeCannotCreateIndex, "default_language needs a string type")
		}
		lang, ok := text.LookupLanguage(l)
		if !ok {
			return mongoerr.New(codeCannotCreateIndex, "default_language is not valid")
		}
		tp.language = lang
	case "language_override":
		o, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(codeCannotCreateIndex, "language_override must be a string")
		}
		if o == "" || strings.HasPrefix(o, "$") || strings.Contains(o, ".") {
			return mongoerr.New(codeCannotCreateIndex, "language_override is not valid")
		}
		tp.override = o
	case "textIndexVersion":
		return s.parseTextVersion(v)
	}
	return nil
}

// parseTextVersion accepts version 3, the one DumboDB implements; mongod
// also builds version 2 (no diacritic folding, an older tokeniser), which
// DumboDB refuses rather than building a version 3 index under its name.
func (s *Spec) parseTextVersion(v bsoncore.Value) error {
	f, ok := v.AsFloat64OK()
	if !ok {
		return mongoerr.New(codeCannotCreateIndex, "text index option 'textIndexVersion' must be a number")
	}
	switch n := int32(f); n {
	case 3:
		s.textParse().version = n
	case 1, 2:
		return mongoerr.New(mongoerr.NotImplemented, "textIndexVersion %d is not supported by DumboDB (only 3)", n)
	default:
		return mongoerr.New(codeCannotCreateIndex, "bad textIndexVersion: %d", n)
	}
	return nil
}

// finishText builds the text configuration once the whole spec is read.
func (s *Spec) finishText() error {
	tp := s.tp
	if tp == nil {
		return nil
	}
	if tp.textAt < 0 {
		return mongoerr.New(codeCannotCreateIndex, "weights, default_language, language_override and textIndexVersion are only valid for text indexes")
	}
	// A unique text index refuses a second document with one of its
	// keys, a term with the same score, as mongod's does.
	if s.PrepareUnique || s.ExpireAfter >= 0 {
		return mongoerr.New(codeCannotCreateIndex, "text indexes do not support prepareUnique or expireAfterSeconds")
	}
	weights, err := tp.fieldWeights()
	if err != nil {
		return err
	}
	cfg := &text.Config{Language: tp.language, LanguageOverride: tp.override}
	if cfg.Language == nil {
		cfg.Language, _ = text.LookupLanguage("english")
	}
	if cfg.LanguageOverride == "" {
		cfg.LanguageOverride = "language"
	}
	names := make([]string, 0, len(weights))
	for f := range weights {
		names = append(names, f)
	}
	sort.Strings(names) // mongod lists weights in field name order
	wb := bsoncore.NewDocumentBuilder()
	for _, f := range names {
		cfg.Fields = append(cfg.Fields, text.Field{Path: f, Weight: float64(weights[f])})
		wb.AppendInt32(f, weights[f])
	}
	s.Text = cfg
	s.textWeights = wb.Build()
	s.Key = s.textKeyPattern()
	s.Fields = append(append(append([]Field(nil), s.TextPrefix...), Field{Path: "_fts"}, Field{Path: "_ftsx"}), s.TextSuffix...)
	return nil
}

// fieldWeights are the text fields' weights: 1 for those of the key, then
// the weights option's (whole numbers, as mongod truncates them).
func (tp *textParse) fieldWeights() (map[string]int32, error) {
	weights := map[string]int32{}
	for _, f := range tp.keyFields {
		weights[f] = 1
	}
	if tp.weights.Type == bsoncore.TypeString {
		weights[text.Wildcard] = 1
	}
	if d, ok := tp.weights.DocumentOK(); ok {
		els, _ := d.Elements()
		for _, el := range els {
			w, ok := el.Value().AsFloat64OK()
			if !ok || math.IsNaN(w) {
				return nil, mongoerr.New(codeCannotCreateIndex, "weight for text index needs numeric type")
			}
			if err := checkWeightField(el.Key()); err != nil {
				return nil, err
			}
			if w >= maxTextWeight || int64(w) <= 0 {
				return nil, mongoerr.New(codeCannotCreateIndex, "text index weight must be in the exclusive interval (0,%d) but found: %d", maxTextWeight, int64(w))
			}
			weights[el.Key()] = int32(w)
		}
	}
	if len(weights) == 0 {
		return nil, mongoerr.New(codeCannotCreateIndex, "text index option 'weights' must specify fields or the wildcard")
	}
	return weights, nil
}

// checkWeightField refuses weights on paths mongod refuses.
func checkWeightField(f string) error {
	if f == text.Wildcard {
		return nil
	}
	for _, part := range strings.Split(f, ".") {
		switch {
		case part == "":
			return mongoerr.New(codeCannotCreateIndex, "weight cannot have empty path component")
		case strings.HasPrefix(part, "$"):
			return mongoerr.New(codeCannotCreateIndex, "weight cannot have path component with $ prefix")
		}
	}
	return nil
}

// textKeyPattern is the key pattern listIndexes shows:
// {prefix..., _fts: "text", _ftsx: 1, suffix...}.
func (s *Spec) textKeyPattern() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	appendDir := func(fs []Field) {
		for _, f := range fs {
			if f.Desc {
				b.AppendInt32(f.Path, -1)
			} else {
				b.AppendInt32(f.Path, 1)
			}
		}
	}
	appendDir(s.TextPrefix)
	b.AppendString("_fts", "text").AppendInt32("_ftsx", 1)
	appendDir(s.TextSuffix)
	return b.Build()
}

// textOptions are the normalised text options listIndexes shows.
func (s *Spec) textOptions(b *bsoncore.DocumentBuilder) {
	b.AppendDocument("weights", s.textWeights).
		AppendString("default_language", s.Text.Language.Name).
		AppendString("language_override", s.Text.LanguageOverride).
		AppendInt32("textIndexVersion", 3)
}

// textKeys are a document's text index entries (field part).
func (s *Spec) textKeys(doc bsoncore.Document) ([][]byte, bool, error) {
	if s.partial != nil && !s.partial.Match(doc) {
		return nil, false, nil
	}
	prefix, err := textExtraKey(nil, doc, s.TextPrefix, "prefix")
	if err != nil {
		return nil, false, err
	}
	suffix, err := textExtraKey(nil, doc, s.TextSuffix, "suffix")
	if err != nil {
		return nil, false, err
	}
	scores, err := text.TermScores(doc, *s.Text, text.Sensitivity{})
	if err != nil {
		return nil, false, err
	}
	var keys [][]byte
	for term, score := range scores {
		k := TextTermPrefix(prefix, term)
		k = EncodeKey(k, bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, score)})
		k = append(k, suffix...)
		if len(k) > MaxKeySize {
			continue
		}
		keys = append(keys, k)
	}
	return dedupe(keys), false, nil
}

// textKeyValue finds, among doc's terms, the term and score a text
// entry's key holds at the start of rest (nulls when none matches).
func (s *Spec) textKeyValue(doc bsoncore.Document, rest []byte) (term, score bsoncore.Value, n int) {
	if doc == nil {
		return nullValue, nullValue, 0
	}
	scores, err := text.TermScores(doc, *s.Text, text.Sensitivity{})
	if err != nil {
		return nullValue, nullValue, 0
	}
	for t, sc := range scores {
		term = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, t)}
		score = bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, sc)}
		if enc := EncodeKey(EncodeKey(nil, term), score); bytes.HasPrefix(rest, enc) {
			return term, score, len(enc)
		}
	}
	return nullValue, nullValue, 0
}

// textExtraKey encodes a compound text index's prefix or suffix fields of
// doc (null when missing); mongod refuses arrays there.
func textExtraKey(dst []byte, doc bsoncore.Document, fields []Field, where string) ([]byte, error) {
	for _, f := range fields {
		fv := collect(doc, f.Path)
		if len(fv.arrays) > 0 || len(fv.vals) != 1 {
			return nil, mongoerr.New(mongoerr.Location16675, "cannot have a multi-key as a %s to a text index", where)
		}
		dst = extend([][]byte{dst}, fv.vals, f.Desc, nil)[0]
	}
	return dst, nil
}

// TextPrefixKey encodes the equality values of a compound text index's
// prefix fields, in key order, as its entries start.
func TextPrefixKey(prefix []Field, vals []bsoncore.Value) []byte {
	var dst []byte
	for i, f := range prefix {
		dst = extend([][]byte{dst}, vals[i:i+1], f.Desc, nil)[0]
	}
	return dst
}

// textScoreKeyLen is the length of an entry's encoded score: a double
// key (class byte, 8 bytes, no remainder) has one length.
var textScoreKeyLen = len(EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, 1)}))

// TextEntrySuffix is the encoded suffix fields of a compound text index's
// entry (its key, the _id key included), given the prefix-and-term part
// it was found under: what follows the score, up to the _id key.
func TextEntrySuffix(entry, termPrefix, idKey []byte) []byte {
	start, end := len(termPrefix)+textScoreKeyLen, len(entry)-len(idKey)
	if start > end {
		return nil
	}
	return entry[start:end]
}

// TextTermPrefix is the key prefix of a term's entries under the encoded
// prefix fields' values (nil for a text index without them).
func TextTermPrefix(prefix []byte, term string) []byte {
	k := append([]byte(nil), prefix...)
	return EncodeKey(k, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, term)})
}
