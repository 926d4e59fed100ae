package server_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// openDatabases reads serverStatus's count of open databases, after a GC
// so that snapshots no longer referenced release their databases.
func openDatabases(t *testing.T, c *mongo.Client) int64 {
	t.Helper()
	runtime.GC()
	st := mustRun(t, c.Database("admin"), bson.D{{Key: "serverStatus", Value: 1}})
	return get(st, "storageEngine", "openDatabases").(int64)
}

// waitOpenDatabases waits until want databases are open, doing each (if
// given) before every look.
func waitOpenDatabases(t *testing.T, c *mongo.Client, want int64, each func()) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if each != nil {
			each()
		}
		n := openDatabases(t, c)
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d databases open, want %d", n, want)
		}
	}
}

func insertN(t *testing.T, coll *mongo.Collection, n int) {
	t.Helper()
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.M{"_id": i, "v": i * 10}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
}

// TestIdleCloseSparesOpenCursors: with a 5 ms idle timeout, a database with
// an open cursor stays open while another closes, the cursor reads every
// document across getMores spread over many idle passes, and once it is
// exhausted the database closes too, and reopens for the next find.
func TestIdleCloseSparesOpenCursors(t *testing.T) {
	ts := startServerWith(t, storage.Options{IdleDatabaseTimeout: 5 * time.Millisecond})
	c := ts.client()
	coll := c.Database("cur").Collection("c")
	insertN(t, coll, 300)
	insertN(t, c.Database("other").Collection("c"), 1)
	cur, err := coll.Find(ctx, bson.M{}, options.Find().SetBatchSize(10).SetSort(bson.M{"_id": 1}))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(ctx)
	waitOpenDatabases(t, c, 1, nil) // other closes; cur has its cursor
	n := 0
	for cur.Next(ctx) {
		if id := cur.Current.Lookup("_id").Int32(); id != int32(n) {
			t.Fatalf("document %d has _id %d", n, id)
		}
		// Until the last batch: then the server's cursor is done.
		if n++; n%50 == 0 && n < 300-10 {
			time.Sleep(20 * time.Millisecond) // idle passes run meanwhile
			if open := openDatabases(t, c); open != 1 {
				t.Fatalf("%d databases open with a cursor on one", open)
			}
		}
	}
	if err := cur.Err(); err != nil || n != 300 {
		t.Fatalf("the cursor read %d documents: %v", n, err)
	}
	cur.Close(ctx)
	waitOpenDatabases(t, c, 0, nil)
	if got, err := coll.CountDocuments(ctx, bson.M{}); err != nil || got != 300 {
		t.Fatalf("after reopening: %d documents, %v", got, err)
	}
}

// TestListDatabasesAndDBStatsAreNotUses: after a restart, listDatabases
// and dbStats open databases they have not read yet but leave none open,
// even with an idle timeout far longer than the test, and a second
// listDatabases reopens nothing; a find does keep its database open.
func TestListDatabasesAndDBStatsAreNotUses(t *testing.T) {
	ts := startServerWith(t, storage.Options{IdleDatabaseTimeout: time.Hour})
	c := ts.client()
	insertN(t, c.Database("full").Collection("c"), 3)
	if err := c.Database("empty").CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("empty").Collection("c").Drop(ctx); err != nil {
		t.Fatal(err)
	}
	ts.restart()
	c = ts.client()
	admin := c.Database("admin")
	list := func() {
		t.Helper()
		res := mustRun(t, admin, bson.D{{Key: "listDatabases", Value: 1}})
		empty := map[string]bool{}
		for _, db := range get(res, "databases").(bson.A) {
			empty[get(db, "name").(string)] = get(db, "empty").(bool)
		}
		if len(empty) != 5 || empty["full"] || !empty["empty"] || empty["admin"] { // and config and local, as on mongod
			t.Fatalf("listDatabases: %v", res)
		}
	}
	opens := func() int64 {
		st := mustRun(t, admin, bson.D{{Key: "serverStatus", Value: 1}})
		return get(st, "storageEngine", "databaseOpens").(int64)
	}
	list()
	if n, o := openDatabases(t, c), opens(); n != 0 || o != 2 {
		t.Fatalf("after listDatabases: %d open, %d opens; want each opened once, none left open", n, o)
	}
	list()
	if o := opens(); o != 2 {
		t.Fatalf("a second listDatabases reopened databases: %d opens", o)
	}
	stats := mustRun(t, c.Database("full"), bson.D{{Key: "dbStats", Value: 1}})
	if num(stats["objects"]) != 3 {
		t.Fatalf("dbStats: %v", stats)
	}
	// Its snapshot keeps the database open until collected; then any look
	// closes it, as dbStats did not count as a use.
	waitOpenDatabases(t, c, 0, list)
	if _, err := c.Database("full").Collection("c").CountDocuments(ctx, bson.M{}); err != nil {
		t.Fatal(err)
	}
	list()
	if n := openDatabases(t, c); n != 1 {
		t.Fatalf("%d databases open after a count, want the one counted", n)
	}
}
