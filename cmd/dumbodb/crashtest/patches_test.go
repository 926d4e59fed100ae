package crashtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The patch writer: one-field updates of large documents, which the server
// applies to those fields alone and the log writes as field records
// (docs/format/wal.md, "Field records"; whole-document updates of large
// documents are logged as patches, "Patches"). A model keeps each document's fields in order; after every
// kill each document must be, byte for byte, its last acknowledged
// version or the version of the one update in flight.
const (
	patchDocs   = 3
	patchFields = 60 // fields of about 1 KB: documents of about 60 KB
	patchKeys   = 90 // field names updates choose from: some are added, some removed
)

// patchModel is what the server acknowledged of each large document.
type patchModel struct {
	mu     sync.Mutex
	acked  [patchDocs]bson.D
	flight [patchDocs]bson.D // the update sent and not acknowledged, if any
}

func patchCollection(client *mongo.Client) *mongo.Collection {
	return client.Database("crash").Collection("large")
}

// openPatchDocs inserts the large documents once.
func openPatchDocs(t *testing.T, client *mongo.Client, m *patchModel) {
	t.Helper()
	if m.acked[0] != nil {
		return
	}
	for i := range patchDocs {
		doc := bson.D{{Key: "_id", Value: i}}
		for f := range patchFields {
			doc = append(doc, bson.E{Key: fmt.Sprint("f", f), Value: strings.Repeat(fmt.Sprint(f%10), 1000)})
		}
		if _, err := patchCollection(client).InsertOne(context.Background(), doc); err != nil {
			t.Fatal(err)
		}
		m.acked[i] = doc
	}
}

// patchWriter sets or unsets one field of a large document at a time until
// the server dies.
func patchWriter(client *mongo.Client, m *patchModel, rng *rand.Rand) {
	ctx := context.Background()
	for n := 0; ; n++ {
		i, key := rng.Intn(patchDocs), fmt.Sprint("f", rng.Intn(patchKeys))
		m.mu.Lock()
		next := slices.Clone(m.acked[i])
		m.mu.Unlock()
		var update bson.M
		if rng.Intn(4) == 0 {
			update = bson.M{"$unset": bson.M{key: ""}}
			next = slices.DeleteFunc(next, func(e bson.E) bool { return e.Key == key })
		} else {
			val := fmt.Sprintf("%d-%s", n, strings.Repeat("v", rng.Intn(900)))
			update = bson.M{"$set": bson.M{key: val}}
			next = setField(next, key, val)
		}
		m.mu.Lock()
		m.flight[i] = next
		m.mu.Unlock()
		if _, err := patchCollection(client).UpdateOne(ctx, bson.M{"_id": i}, update); err != nil {
			return
		}
		m.mu.Lock()
		m.acked[i], m.flight[i] = next, nil
		m.mu.Unlock()
	}
}

// setField sets key in doc as $set does: in place if present, else at the
// end.
func setField(doc bson.D, key string, val any) bson.D {
	for k := range doc {
		if doc[k].Key == key {
			doc[k].Value = val
			return doc
		}
	}
	return append(doc, bson.E{Key: key, Value: val})
}

// checkPatchDocs compares each large document with the model, byte for
// byte, and takes the recovered version as acknowledged.
func checkPatchDocs(t *testing.T, client *mongo.Client, m *patchModel) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range patchDocs {
		raw, err := patchCollection(client).FindOne(context.Background(), bson.M{"_id": i}).Raw()
		if err != nil {
			t.Fatalf("large document %d: %v", i, err)
		}
		switch {
		case sameBytes(t, raw, m.acked[i]):
		case m.flight[i] != nil && sameBytes(t, raw, m.flight[i]):
			m.acked[i] = m.flight[i]
		default:
			t.Fatalf("large document %d after the kill is neither its acknowledged version nor the one in flight", i)
		}
		m.flight[i] = nil
	}
}

func sameBytes(t *testing.T, raw bson.Raw, doc bson.D) bool {
	want, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(raw, want)
}

// wantPatchesLogged checks that the binary logs one-field updates of the
// large documents by field: 20 updates of a 60 KB document must be 20
// field records, and log far less than one copy of it each.
func wantPatchesLogged(t *testing.T, client *mongo.Client) {
	t.Helper()
	before, fieldsBefore := logBytes(t, client), storageStat(t, client, "fieldUpdates")
	rng := rand.New(rand.NewSource(1))
	for range 20 {
		if _, err := patchCollection(client).UpdateOne(context.Background(), bson.M{"_id": 0},
			bson.M{"$set": bson.M{"f1": fmt.Sprint(rng.Int())}}); err != nil {
			t.Fatal(err)
		}
	}
	if per := (logBytes(t, client) - before) / 20; per > 4<<10 {
		t.Fatalf("%d log bytes per one-field update of a 60 KB document: not a patch", per)
	}
	if n := storageStat(t, client, "fieldUpdates") - fieldsBefore; n != 20 {
		t.Fatalf("%d of 20 one-field updates of a 60 KB document logged by field", n)
	}
}

func logBytes(t *testing.T, client *mongo.Client) int64 {
	t.Helper()
	return storageStat(t, client, "logBytes")
}

// storageStat reads a counter of serverStatus.storageEngine.
func storageStat(t *testing.T, client *mongo.Client, name string) int64 {
	t.Helper()
	var st struct {
		StorageEngine bson.Raw `bson:"storageEngine"`
	}
	if err := client.Database("admin").RunCommand(context.Background(), bson.M{"serverStatus": 1}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	n, ok := st.StorageEngine.Lookup(name).Int64OK()
	if !ok {
		t.Fatalf("serverStatus.storageEngine.%s is missing", name)
	}
	return n
}
