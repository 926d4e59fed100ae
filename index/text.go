package index

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"dumbodb/query/mongoerr"
	"dumbodb/query/text"
)

// Text indexes: the key pattern is stored as mongod shows it,
// {_fts: "text", _ftsx: 1}, with the indexed fields in weights. Entries
// are one per distinct term of a document's indexed strings: the encoded
// term (a string key), the encoded score contribution (a double key), then
// the _id key.

// textKey is the normalised key pattern of every text index.
var textKey = bsoncore.NewDocumentBuilder().AppendString("_fts", "text").AppendInt32("_ftsx", 1).Build()

// textParse collects a text index's parts while its spec is read.
type textParse struct {
	keyFields []string // fields given "text" in the key
	fts       bool     // the key names _fts (fields come from weights)
	weights   bsoncore.Document
	language  string
}

// IsText reports a text index.
func (s *Spec) IsText() bool { return s.Text != nil }

func (s *Spec) parseTextOption(key string, v bsoncore.Value) error {
	if s.tp == nil {
		s.tp = &textParse{}
	}
	switch key {
	case "weights":
		d, ok := v.DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'weights' must be an object, not %s", v.Type)
		}
		s.tp.weights = d
	case "default_language":
		l, ok := v.StringValueOK()
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'default_language' must be a string, not %s", v.Type)
		}
		switch strings.ToLower(l) {
		case "english", "en":
			s.tp.language = "english"
		case "none":
			s.tp.language = "none"
		default:
			return mongoerr.New(mongoerr.NotImplemented, "text index language %q is not supported by DumboDB (english, none)", l)
		}
	case "language_override":
		if _, ok := v.StringValueOK(); !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "The field 'language_override' must be a string, not %s", v.Type)
		}
	}
	return nil
}

// finishText builds the text configuration once the whole spec is read.
func (s *Spec) finishText() error {
	tp := s.tp
	if tp == nil {
		return nil
	}
	if len(tp.keyFields) == 0 && !tp.fts {
		return mongoerr.New(codeCannotCreateIndex, "weights, default_language and language_override are only valid for text indexes")
	}
	if s.Unique || s.ExpireAfter >= 0 {
		return mongoerr.New(codeCannotCreateIndex, "text indexes do not support unique or expireAfterSeconds")
	}
	cfg := &text.Config{Language: "english"}
	if tp.language != "" {
		cfg.Language = tp.language
	}
	weights := map[string]float64{}
	var order []string
	for _, f := range tp.keyFields {
		weights[f] = 1
		order = append(order, f)
	}
	if tp.weights != nil {
		els, _ := tp.weights.Elements()
		for _, el := range els {
			w, ok := el.Value().AsFloat64OK()
			if !ok || w <= 0 || w >= 100000 || math.IsNaN(w) {
				return mongoerr.New(codeCannotCreateIndex, "weight for text index needs numeric type between 1 and 99999, got %s", el.Value())
			}
			if el.Key() == "$**" {
				return mongoerr.New(mongoerr.NotImplemented, "wildcard text indexes are not supported by DumboDB")
			}
			if _, seen := weights[el.Key()]; !seen {
				order = append(order, el.Key())
			}
			weights[el.Key()] = w
		}
	}
	if len(order) == 0 {
		return mongoerr.New(codeCannotCreateIndex, "text index needs at least one field")
	}
	wb := bsoncore.NewDocumentBuilder()
	for _, f := range order {
		cfg.Fields = append(cfg.Fields, text.Field{Path: f, Weight: weights[f]})
		w := weights[f]
		if w == math.Trunc(w) {
			wb.AppendInt32(f, int32(w))
		} else {
			wb.AppendDouble(f, w)
		}
	}
	s.Text = cfg
	s.textWeights = wb.Build()
	s.Key = textKey
	s.Fields = []Field{{Path: "_fts"}, {Path: "_ftsx"}}
	return nil
}

// textOptions are the normalised text options listIndexes shows.
func (s *Spec) textOptions(b *bsoncore.DocumentBuilder) {
	b.AppendDocument("weights", s.textWeights).
		AppendString("default_language", s.Text.Language).
		AppendString("language_override", "language").
		AppendInt32("textIndexVersion", 3)
}

// textKeys are a document's text index entries (field part).
func (s *Spec) textKeys(doc bsoncore.Document) ([][]byte, bool, error) {
	if s.partial != nil && !s.partial.Match(doc) {
		return nil, false, nil
	}
	var keys [][]byte
	for term, score := range text.TermScores(doc, *s.Text) {
		k := EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, term)})
		k = EncodeKey(k, bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, score)})
		if len(k) > MaxKeySize {
			continue
		}
		keys = append(keys, k)
	}
	return dedupe(keys), false, nil
}

// TextTermPrefix is the key prefix of a term's entries.
func TextTermPrefix(term string) []byte {
	return EncodeKey(nil, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, term)})
}
