package server_test

import (
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestUsersAndRolesRoundTripAsTheToolsDo: with --auth, the users and
// roles of a database read from admin.system.users and
// admin.system.roles, as mongodump --dumpDbUsersAndRoles reads them, come
// back through admin.tempusers, admin.temproles and
// _mergeAuthzCollections, as mongorestore --restoreDbUsersAndRoles
// writes them: a restored user logs in with its old password and holds
// its user-defined role; a merge without drop leaves existing users
// alone; one who may not create users cannot merge.
func TestUsersAndRolesRoundTripAsTheToolsDo(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	shop, admin := root.Database("shop"), root.Database("admin")
	if _, err := shop.Collection("orders").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, shop, bson.D{{Key: "createRole", Value: "orderReader"}, {Key: "roles", Value: bson.A{}},
		{Key: "privileges", Value: bson.A{bson.M{"resource": bson.M{"db": "shop", "collection": "orders"}, "actions": bson.A{"find"}}}}})
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "alice"}, {Key: "pwd", Value: "alicepw"}, {Key: "roles", Value: bson.A{"orderReader"}}})
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "bobpw"}, {Key: "roles", Value: bson.A{"read"}}})

	dump := func(coll string) []any {
		cur, err := admin.Collection(coll).Find(ctx, bson.M{"db": "shop"})
		if err != nil {
			t.Fatal(err)
		}
		var docs []bson.Raw
		if err := cur.All(ctx, &docs); err != nil {
			t.Fatal(err)
		}
		out := make([]any, len(docs))
		for i, d := range docs {
			out[i] = d
		}
		return out
	}
	users, roles := dump("system.users"), dump("system.roles")
	if len(users) != 2 || len(roles) != 1 {
		t.Fatalf("dumped %d users and %d roles", len(users), len(roles))
	}
	mustRun(t, shop, bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	mustRun(t, shop, bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "bob"}, {Key: "pwd", Value: "newpw"}, {Key: "roles", Value: bson.A{"read"}}})
	for coll, docs := range map[string][]any{"tempusers": users, "temproles": roles} {
		if _, err := admin.Collection(coll).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	merge := bson.D{{Key: "_mergeAuthzCollections", Value: 1}, {Key: "tempUsersCollection", Value: "admin.tempusers"},
		{Key: "tempRolesCollection", Value: "admin.temproles"}, {Key: "drop", Value: false}, {Key: "db", Value: "shop"}}
	reader := ts.authClient("bob", "newpw", "shop", "")
	_, err := run(t, reader.Database("admin"), merge)
	wantCode(t, err, 13, "Unauthorized")
	mustRun(t, admin, merge)

	alice := ts.authClient("alice", "alicepw", "shop", "")
	if n, err := alice.Database("shop").Collection("orders").CountDocuments(ctx, bson.M{}); err != nil || n != 1 {
		t.Fatalf("the restored alice reads %d orders (%v)", n, err)
	}
	if _, err := alice.Database("shop").Collection("orders").InsertOne(ctx, bson.M{"_id": 2}); err == nil {
		t.Error("the restored alice may write: her role grants find only")
	}
	if err := ts.authClient("bob", "newpw", "shop", "").Ping(ctx, nil); err != nil {
		t.Errorf("a merge without drop replaced bob: %v", err)
	}
	mustRun(t, admin, append(bson.D{}, merge[0], merge[1], merge[2], bson.E{Key: "drop", Value: true}, merge[4]))
	if err := ts.authClient("bob", "bobpw", "shop", "").Ping(ctx, nil); err != nil {
		t.Errorf("a merge with drop did not restore bob's old password: %v", err)
	}
	names, err := admin.ListCollectionNames(ctx, bson.M{"name": bson.M{"$regex": "^system\\."}})
	if err != nil || len(names) != 3 {
		t.Errorf("admin's listCollections shows %v (%v)", names, err)
	}
}

// TestAuthCollectionsNeedToViewEveryUser: a user who reads every
// database but may not view users gets Unauthorized on
// admin.system.users and admin.system.roles, and still reads
// admin.system.version.
func TestAuthCollectionsNeedToViewEveryUser(t *testing.T) {
	ts := startServer(t, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	mustRun(t, root.Database("admin"), bson.D{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"readAnyDatabase"}}})
	admin := ts.authClient("reader", "pw", "admin", "").Database("admin")
	for _, coll := range []string{"system.users", "system.roles"} {
		_, err := admin.Collection(coll).CountDocuments(ctx, bson.M{})
		wantCode(t, err, 13, "Unauthorized")
	}
	if n, err := admin.Collection("system.version").CountDocuments(ctx, bson.M{}); err != nil || n != 2 {
		t.Errorf("system.version: %d documents (%v)", n, err)
	}
}

// TestUndropIntoAProtectedBranch: undrop of a collection writes the
// branch it was dropped from, so a user without the branch's role is
// refused, as for any write of it.
func TestUndropIntoAProtectedBranch(t *testing.T) {
	ts := startServerWith(t, storage.Options{UndropRetention: time.Hour}, withAuth)
	createRoot(t, ts)
	root := ts.authClient("root", "rootpw", "admin", "")
	shop := root.Database("shop")
	if _, err := shop.Collection("items").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, shop, bson.D{{Key: "createUser", Value: "ops"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"dbAdmin", "readWrite"}}})
	mustRun(t, shop, bson.D{{Key: "dumboProtectBranch", Value: "main"}, {Key: "roles", Value: bson.A{bson.M{"role": "root", "db": "admin"}}}})
	if err := shop.Collection("items").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	ops := ts.authClient("ops", "pw", "shop", "")
	_, err := run(t, ops.Database("admin"), bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "items"}})
	wantCode(t, err, 13, "Unauthorized")
	mustRun(t, root.Database("admin"), bson.D{{Key: "dumboUndrop", Value: 1}, {Key: "name", Value: "shop"}, {Key: "collection", Value: "items"}})
}
