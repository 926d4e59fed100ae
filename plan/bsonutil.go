package plan

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// nonEmpty reports whether d has at least one field (an empty BSON
// document is 5 bytes).
func nonEmpty(d bsoncore.Document) bool { return len(d) > 5 }
