package server_test

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// bigDoc is a document of exactly size bytes of BSON.
func bigDoc(t *testing.T, id, size int) bson.Raw {
	t.Helper()
	overhead, _ := bson.Marshal(bson.D{{Key: "_id", Value: int32(id)}, {Key: "b", Value: bson.Binary{Data: []byte{}}}})
	data := make([]byte, size-len(overhead))
	rand.New(rand.NewSource(int64(id))).Read(data)
	raw, err := bson.Marshal(bson.D{{Key: "_id", Value: int32(id)}, {Key: "b", Value: bson.Binary{Data: data}}})
	if err != nil || len(raw) != size {
		t.Fatalf("built %d bytes: %v", len(raw), err)
	}
	return raw
}

func TestLargeDocumentsRoundTripExactly(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("big")
	// Sizes around Dolt's inline limit and its uint16 bug, and the maximum.
	sizes := []int{100, 2047, 2048, 65535, 65536, 66000, 1 << 20, 16 << 20}
	for i, size := range sizes {
		if _, err := coll.InsertOne(ctx, bigDoc(t, i, size)); err != nil {
			t.Fatalf("insert %d bytes: %v", size, err)
		}
	}
	check := func() {
		for i, size := range sizes {
			raw, err := coll.FindOne(ctx, bson.M{"_id": i}).Raw()
			if err != nil {
				t.Fatalf("find %d: %v", size, err)
			}
			if !bytes.Equal(raw, bigDoc(t, i, size)) {
				t.Fatalf("document of %d bytes came back as %d different bytes", size, len(raw))
			}
		}
	}
	check()
	ts.restart()
	coll = ts.client().Database("test").Collection("big")
	check()
	_, err := coll.InsertOne(ctx, bigDoc(t, 99, 16<<20+1))
	if err == nil {
		t.Fatal("a document over 16 MiB was accepted")
	}
}

func TestDataSurvivesRestart(t *testing.T) {
	ts := startServer(t)
	c := ts.client()
	coll := c.Database("test").Collection("c")
	seed(t, coll, 50)
	if _, err := coll.UpdateMany(ctx, bson.M{"mod": 1}, bson.M{"$set": bson.M{"u": true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.DeleteMany(ctx, bson.M{"mod": 2}); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("test").CreateCollection(ctx, "empty"); err != nil {
		t.Fatal(err)
	}
	ts.restart()
	c = ts.client()
	coll = c.Database("test").Collection("c")
	if n, _ := coll.CountDocuments(ctx, bson.M{}); n != 34 {
		t.Fatalf("after restart: %d docs", n)
	}
	if n, _ := coll.CountDocuments(ctx, bson.M{"u": true}); n != 17 {
		t.Fatalf("after restart: %d updated docs", n)
	}
	names, _ := c.Database("test").ListCollectionNames(ctx, bson.M{})
	if len(names) != 2 {
		t.Fatalf("collections after restart: %v", names)
	}
	// The duplicate check still works against recovered data.
	_, err := coll.InsertOne(ctx, bson.M{"_id": 0})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteErrors[0].Code != 11000 {
		t.Fatalf("duplicate after restart: %v", err)
	}
}

func TestIDTypesOrderAndEquality(t *testing.T) {
	ts := startServer(t)
	coll := ts.client().Database("test").Collection("ids")
	oid := bson.NewObjectID()
	idsInOrder := []any{
		bson.MinKey{}, nil, int32(-5), 2.5, int64(3), "a", "b", bson.M{"x": 1},
		bson.Binary{Data: []byte{1}}, oid, false, true, bson.DateTime(5), bson.Timestamp{T: 1}, bson.MaxKey{},
	}
	for i := len(idsInOrder) - 1; i >= 0; i-- {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": idsInOrder[i]}); err != nil {
			t.Fatalf("insert _id %v: %v", idsInOrder[i], err)
		}
	}
	cur, err := coll.Find(ctx, bson.M{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.Raw
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(idsInOrder) {
		t.Fatalf("got %d docs", len(docs))
	}
	for i, d := range docs {
		want, _ := bson.Marshal(bson.M{"_id": idsInOrder[i]})
		if !bytes.Equal(d, want) {
			t.Errorf("position %d: got %v want %v", i, d, bson.Raw(want))
		}
	}
	// 3, 3.0 and NumberLong(3) are the same _id.
	for _, dup := range []any{int32(3), 3.0} {
		if _, err := coll.InsertOne(ctx, bson.M{"_id": dup}); err == nil {
			t.Errorf("_id %v accepted next to NumberLong(3)", dup)
		}
	}
}
