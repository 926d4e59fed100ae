package plan

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

var emptyDoc = bsoncore.NewDocumentBuilder().Build()

func orEmpty(d bsoncore.Document) bsoncore.Document {
	if d == nil {
		return emptyDoc
	}
	return d
}

// nonEmpty reports whether d has at least one field (an empty BSON
// document is 5 bytes).
func nonEmpty(d bsoncore.Document) bool { return len(d) > 5 }
