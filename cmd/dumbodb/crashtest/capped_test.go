package crashtest

import (
	"context"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// The capped writer: inserts _id 0, 1, 2, ... one at a time into a capped
// collection of cappedMax documents, so that every insert past the first
// cappedMax also removes the oldest. After every kill the collection, in
// natural order, must be the last min(cappedMax, n) _ids up to n, where
// n is the last acknowledged insert or the one in flight: no insert half
// applied (a document without its overflow delete, or the reverse), and
// the insertion order replayed.
const cappedMax = 50

type cappedModel struct {
	mu           sync.Mutex
	acked, tried int // next _id acknowledged / sent
}

func cappedCollection(client *mongo.Client) *mongo.Collection {
	return client.Database("crash").Collection("capped")
}

func openCapped(t *testing.T, client *mongo.Client, m *cappedModel) {
	t.Helper()
	if m.acked > 0 || m.tried > 0 {
		return
	}
	err := client.Database("crash").RunCommand(context.Background(),
		bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 1 << 20}, {Key: "max", Value: cappedMax}}).Err()
	if err != nil {
		t.Fatal(err)
	}
}

func cappedWriter(client *mongo.Client, m *cappedModel) {
	ctx := context.Background()
	for {
		m.mu.Lock()
		n := m.acked
		m.tried = n + 1
		m.mu.Unlock()
		if _, err := cappedCollection(client).InsertOne(ctx, bson.M{"_id": n, "pad": "capped"}); err != nil {
			return
		}
		m.mu.Lock()
		m.acked = n + 1
		m.mu.Unlock()
	}
}

// checkCapped compares the recovered collection with the model and takes
// the recovered state as acknowledged.
func checkCapped(t *testing.T, client *mongo.Client, m *cappedModel) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := cappedCollection(client).Find(context.Background(), bson.M{}, options.Find().SetHint(bson.M{"$natural": 1}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID int `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	next := 0
	if len(docs) > 0 {
		next = docs[len(docs)-1].ID + 1
	}
	if next < m.acked || next > m.tried {
		t.Fatalf("capped collection ends at %d: acknowledged up to %d, tried %d", next, m.acked, m.tried)
	}
	if want := min(cappedMax, next); len(docs) != want {
		t.Fatalf("capped collection holds %d documents, want %d", len(docs), want)
	}
	for i, d := range docs {
		if d.ID != next-len(docs)+i {
			t.Fatalf("capped collection out of insertion order at %d: %v", i, docs)
		}
	}
	m.acked, m.tried = next, next
}
