package server_test

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// findOne returns one document by _id as relaxed extended JSON.
func findJSON(t *testing.T, coll *mongo.Collection, id any) string {
	t.Helper()
	var d bson.D
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return js(d)
}

func TestQueryLangPositionalAndArrayFilters(t *testing.T) {
	coll := startServer(t).client().Database("q").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "g", Value: bson.A{80, 95, 90}},
		{Key: "items", Value: bson.A{bson.D{{Key: "q", Value: 1}}, bson.D{{Key: "q", Value: 5}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "g", Value: 95}}, bson.D{{Key: "$set", Value: bson.D{{Key: "g.$", Value: 96}}}}); err != nil {
		t.Fatal(err)
	}
	opts := options.UpdateOne().SetArrayFilters([]any{bson.D{{Key: "it.q", Value: bson.D{{Key: "$gt", Value: 2}}}}})
	if _, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$inc", Value: bson.D{{Key: "items.$[it].q", Value: 10}, {Key: "g.$[]", Value: 1}}}}, opts); err != nil {
		t.Fatal(err)
	}
	if got, want := findJSON(t, coll, 1), `{"_id":1,"g":[81,97,91],"items":[{"q":1},{"q":15}]}`; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
	// findAndModify threads arrayFilters too.
	fam := options.FindOneAndUpdate().SetArrayFilters([]any{bson.D{{Key: "x", Value: bson.D{{Key: "$lt", Value: 90}}}}}).SetReturnDocument(options.After)
	var d bson.D
	if err := coll.FindOneAndUpdate(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "g.$[x]", Value: 0}}}}, fam).Decode(&d); err != nil {
		t.Fatal(err)
	}
	if got, want := js(d), `{"_id":1,"g":[0,97,91],"items":[{"q":1},{"q":15}]}`; got != want {
		t.Fatalf("findAndModify got %s want %s", got, want)
	}
	_, err := coll.UpdateOne(ctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "g.$[nope]", Value: 0}}}})
	var we mongo.WriteException
	if !errors.As(err, &we) || len(we.WriteErrors) != 1 || we.WriteErrors[0].Code != 2 {
		t.Fatalf("want write error 2, got %v", err)
	}
}

func TestQueryLangPipelineUpdateAndExpr(t *testing.T) {
	coll := startServer(t).client().Database("q").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 5}, {Key: "b", Value: 2}},
		bson.D{{Key: "_id", Value: 2}, {Key: "a", Value: 1}, {Key: "b", Value: 3}},
	}); err != nil {
		t.Fatal(err)
	}
	pipeline := mongo.Pipeline{{{Key: "$set", Value: bson.D{{Key: "sum", Value: bson.D{{Key: "$add", Value: bson.A{"$a", "$b"}}}}}}}}
	res, err := coll.UpdateMany(ctx, bson.D{}, pipeline)
	if err != nil || res.ModifiedCount != 2 {
		t.Fatalf("pipeline update %v %v", res, err)
	}
	cur, err := coll.Find(ctx, bson.D{{Key: "$expr", Value: bson.D{{Key: "$gt", Value: bson.A{"$a", "$b"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, cur); len(got) != 1 || got[0] != int32(1) {
		t.Fatalf("$expr matched %v", got)
	}
	// let variables and expression projections in find.
	fopts := options.Find().SetLet(bson.D{{Key: "lim", Value: 4}}).
		SetProjection(bson.D{{Key: "_id", Value: 0}, {Key: "big", Value: bson.D{{Key: "$gt", Value: bson.A{"$sum", "$$lim"}}}}}).
		SetSort(bson.D{{Key: "_id", Value: 1}})
	cur, err = coll.Find(ctx, bson.D{}, fopts)
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.D
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if got, want := js(docs), `[{"big":true},{"big":false}]`; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
	_, err = coll.Find(ctx, bson.D{{Key: "$expr", Value: bson.D{{Key: "$add", Value: bson.A{"$a", "x"}}}}})
	if err == nil {
		cur, _ := coll.Find(ctx, bson.D{{Key: "$expr", Value: bson.D{{Key: "$add", Value: bson.A{"$a", "x"}}}}})
		err = cur.All(ctx, &docs)
	}
	wantCode(t, err, 14, "TypeMismatch")
}

func TestQueryLangCollationAndHint(t *testing.T) {
	coll := startServer(t).client().Database("q").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: 1}, {Key: "s", Value: "Alice"}},
		bson.D{{Key: "_id", Value: 2}, {Key: "s", Value: "alice"}},
		bson.D{{Key: "_id", Value: 3}, {Key: "s", Value: "bob"}},
	}); err != nil {
		t.Fatal(err)
	}
	ci := &options.Collation{Locale: "en", Strength: 2}
	// CountDocuments is an aggregate, which does not take collations yet.
	cur, err := coll.Find(ctx, bson.D{{Key: "s", Value: "ALICE"}}, options.Find().SetCollation(ci))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, cur); len(got) != 2 {
		t.Fatalf("find with collation %v", got)
	}
	res, err := coll.UpdateMany(ctx, bson.D{{Key: "s", Value: "ALICE"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "x", Value: 1}}}}, options.UpdateMany().SetCollation(ci))
	if err != nil || res.MatchedCount != 2 {
		t.Fatalf("update with collation %v %v", res, err)
	}
	del, err := coll.DeleteMany(ctx, bson.D{{Key: "s", Value: "BOB"}}, options.DeleteMany().SetCollation(ci))
	if err != nil || del.DeletedCount != 1 {
		t.Fatalf("delete with collation %v %v", del, err)
	}
	cur, err = coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "$natural", Value: -1}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, cur); len(got) != 2 || got[0] != int32(2) {
		t.Fatalf("$natural -1 gave %v", got)
	}
	_, err = coll.Find(ctx, bson.D{}, options.Find().SetHint(bson.D{{Key: "s", Value: 1}}))
	wantCode(t, err, 2, "BadValue")
	if _, err := coll.Find(ctx, bson.D{}, options.Find().SetHint("_id_")); err != nil {
		t.Fatal(err)
	}
}
