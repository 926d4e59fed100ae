package server_test

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestFindByIDAlone covers the finds that skip the planner (idHackID)
// and their neighbours that must not: each answer is what the planner's
// path gives for the same documents.
func TestFindByIDAlone(t *testing.T) {
	db, coll := startCollection(t, "idhack", "c")
	oid := bson.NewObjectID()
	when := bson.NewDateTimeFromTime(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	docs := []any{
		bson.D{{Key: "_id", Value: int32(5)}, {Key: "v", Value: "five"}},
		bson.D{{Key: "_id", Value: "abc"}, {Key: "v", Value: "string"}},
		bson.D{{Key: "_id", Value: oid}, {Key: "v", Value: "oid"}},
		bson.D{{Key: "_id", Value: when}, {Key: "v", Value: "date"}},
		bson.D{{Key: "_id", Value: true}, {Key: "v", Value: "bool"}},
		bson.D{{Key: "_id", Value: 2.5}, {Key: "v", Value: "double"}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "v", Value: "doc"}},
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	ci := db.Collection("ci")
	if err := db.CreateCollection(ctx, "ci", options.CreateCollection().SetCollation(&options.Collation{Locale: "en", Strength: 2})); err != nil {
		t.Fatal(err)
	}
	if _, err := ci.InsertOne(ctx, bson.D{{Key: "_id", Value: "abc"}, {Key: "v", Value: "ci"}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		coll   *mongo.Collection
		filter bson.D
		opts   []options.Lister[options.FindOneOptions]
		want   string // v of the document found ("": none)
	}{
		{coll, bson.D{{Key: "_id", Value: int32(5)}}, nil, "five"},
		{coll, bson.D{{Key: "_id", Value: int64(5)}}, nil, "five"},
		{coll, bson.D{{Key: "_id", Value: 5.0}}, nil, "five"},
		{coll, bson.D{{Key: "_id", Value: 2.5}}, nil, "double"},
		{coll, bson.D{{Key: "_id", Value: "abc"}}, nil, "string"},
		{coll, bson.D{{Key: "_id", Value: "ABC"}}, nil, ""},
		{coll, bson.D{{Key: "_id", Value: oid}}, nil, "oid"},
		{coll, bson.D{{Key: "_id", Value: when}}, nil, "date"},
		{coll, bson.D{{Key: "_id", Value: true}}, nil, "bool"},
		{coll, bson.D{{Key: "_id", Value: int32(6)}}, nil, ""},
		{db.Collection("none"), bson.D{{Key: "_id", Value: int32(5)}}, nil, ""},
		// The planner's: an embedded document, an operator, a skip, a
		// projection, a collation (the request's or the collection's).
		{coll, bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: 1}}}}, nil, "doc"},
		{coll, bson.D{{Key: "_id", Value: bson.D{{Key: "$gt", Value: 4}}}}, []options.Lister[options.FindOneOptions]{options.FindOne().SetSort(bson.D{{Key: "_id", Value: 1}})}, "five"},
		{coll, bson.D{{Key: "_id", Value: int32(5)}}, []options.Lister[options.FindOneOptions]{options.FindOne().SetSkip(1)}, ""},
		{coll, bson.D{{Key: "_id", Value: "ABC"}}, []options.Lister[options.FindOneOptions]{options.FindOne().SetCollation(&options.Collation{Locale: "en", Strength: 2})}, "string"},
		{ci, bson.D{{Key: "_id", Value: "ABC"}}, nil, "ci"},
		{coll, bson.D{{Key: "_id", Value: int32(5)}}, []options.Lister[options.FindOneOptions]{options.FindOne().SetProjection(bson.D{{Key: "v", Value: 1}, {Key: "_id", Value: 0}})}, "five"},
	}
	for _, c := range cases {
		var got bson.M
		err := c.coll.FindOne(ctx, c.filter, c.opts...).Decode(&got)
		switch {
		case c.want == "" && err != mongo.ErrNoDocuments:
			t.Errorf("%s %v: want none, got %v (%v)", c.coll.Name(), c.filter, got, err)
		case c.want != "" && (err != nil || got["v"] != c.want):
			t.Errorf("%s %v: want v %q, got %v (%v)", c.coll.Name(), c.filter, c.want, got, err)
		}
	}
}
