package server

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Empty timestamps: a document inserted with Timestamp(0, 0) in a
// top-level field other than _id gets the current cluster time there
// instead, as mongod does, unless the write sets bypassEmptyTsReplacement
// (which MongoDB's Database Tools send, to restore data as it was). The
// same holds for an update's replacement document, and so for the
// document an upsert makes from one.

// replacementFilled is an update's u with its empty timestamps filled
// when it is a replacement document (no update operators) and keep
// (bypassEmptyTsReplacement) is not set; u itself otherwise.
func (s *Server) replacementFilled(u bsoncore.Value, keep bool) bsoncore.Value {
	doc, ok := u.DocumentOK()
	if keep || !ok || !hasEmptyTimestamp(doc) {
		return u
	}
	if first, err := doc.IndexErr(0); err == nil && strings.HasPrefix(first.Key(), "$") {
		return u
	}
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.fillEmptyTimestamps(doc)}
}

// fillEmptyTimestamps returns doc with each top-level empty timestamp
// but _id's replaced by a new cluster time; doc itself when it has none.
func (s *Server) fillEmptyTimestamps(doc bsoncore.Document) bsoncore.Document {
	if !hasEmptyTimestamp(doc) {
		return doc
	}
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		if isEmptyTimestamp(el) {
			t := s.clock.tickWrite()
			b.AppendTimestamp(el.Key(), t.t, t.i)
			continue
		}
		b.AppendValue(el.Key(), el.Value())
	}
	return b.Build()
}

// hasEmptyTimestamp reads doc's top-level elements in place: it runs on
// every inserted document, and Elements would allocate for each.
func hasEmptyTimestamp(doc bsoncore.Document) bool {
	if len(doc) < 5 {
		return false
	}
	for rest := doc[4:]; len(rest) > 1; {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return false
		}
		if isEmptyTimestamp(el) {
			return true
		}
		rest = next
	}
	return false
}

func isEmptyTimestamp(el bsoncore.Element) bool {
	if el.Key() == "_id" {
		return false
	}
	t, i, ok := el.Value().TimestampOK()
	return ok && t == 0 && i == 0
}
