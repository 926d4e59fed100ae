package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/testload"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Expression bombs: a few bytes of aggregation expression that ask for
// gigabytes ($range, an array doubled by $reduce) or for hours (a $map
// over a million elements building a million-element array for each).
// They stop at their memory limit (ExceededMemoryLimit) or their
// maxTimeMS (MaxTimeMSExpired), killOp and a hang-up stop them, and the
// server answers other clients meanwhile. The bounds are generous, for a
// loaded machine under -race: what matters is that an answer comes.

// endlessExpr builds a million-element array a million times: 10^12
// steps, never much memory at once.
const endlessExpr = `{"$sum": {"$map": {"input": {"$range": [0, 1000000]}, "in": {"$size": {"$range": [0, 1000000]}}}}}`

// exprBombs are commands (extended JSON) that once ran unbounded.
var exprBombs = map[string]string{
	"range":              `{"aggregate": 1, "pipeline": [{"$documents": [{"x": {"$size": {"$range": [0, 100000000]}}}]}], "cursor": {}}`,
	"array doubling":     `{"aggregate": 1, "pipeline": [{"$documents": [{"x": {"$size": {"$reduce": {"input": {"$range": [0, 24]}, "initialValue": [0], "in": {"$concatArrays": ["$$value", "$$value"]}}}}}]}], "cursor": {}}`,
	"string doubling":    `{"aggregate": 1, "pipeline": [{"$documents": [{"x": {"$strLenBytes": {"$reduce": {"input": {"$range": [0, 40]}, "initialValue": "x", "in": {"$concat": ["$$value", "$$value"]}}}}}]}], "cursor": {}}`,
	"endless project":    `{"aggregate": "c", "pipeline": [{"$project": {"x": ` + endlessExpr + `}}], "cursor": {}}`,
	"endless let":        `{"aggregate": "c", "pipeline": [], "cursor": {}, "let": {"x": ` + endlessExpr + `}}`,
	"endless filter":     `{"find": "c", "filter": {"$expr": ` + endlessExpr + `}}`,
	"endless projection": `{"find": "c", "projection": {"x": ` + endlessExpr + `}}`,
}

// bombCommand parses a bomb, with maxTimeMS when given (> 0).
func bombCommand(t *testing.T, js string, maxTimeMS int) bson.D {
	t.Helper()
	var cmd bson.D
	if err := bson.UnmarshalExtJSON([]byte(js), false, &cmd); err != nil {
		t.Fatal(err)
	}
	if maxTimeMS > 0 {
		cmd = append(cmd, bson.E{Key: "maxTimeMS", Value: maxTimeMS})
	}
	return cmd
}

// wantExprStop asserts the error of a bomb stopped by its limits: its
// memory limit or its maxTimeMS.
func wantExprStop(t *testing.T, err error) {
	t.Helper()
	var ce mongo.CommandError
	if !errors.As(err, &ce) {
		t.Fatalf("want MaxTimeMSExpired or ExceededMemoryLimit, got %v (%T)", err, err)
	}
	if ce.Code != int32(mongoerr.MaxTimeMSExpired) && ce.Code != int32(mongoerr.ExceededMemoryLimit) {
		t.Fatalf("want MaxTimeMSExpired or ExceededMemoryLimit, got %d %s: %s", ce.Code, ce.Name, ce.Message)
	}
}

// bombFixture starts a server with a collection c of one document and
// returns its database.
func bombFixture(t *testing.T) (*testServer, *mongo.Database) {
	t.Helper()
	ts := testCommandsServer(t)
	db := ts.client().Database("bomb")
	mustRun(t, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	return ts, db
}

// TestExpressionBombsStopAtTheirLimits: each bomb with maxTimeMS 200
// fails with MaxTimeMSExpired or ExceededMemoryLimit, soon, while another
// client's ping is answered.
func TestExpressionBombsStopAtTheirLimits(t *testing.T) {
	ts, db := bombFixture(t)
	admin := ts.client().Database("admin")
	for name, js := range exprBombs {
		t.Run(name, func(t *testing.T) {
			cmd := bombCommand(t, js, 200)
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				var out bson.M
				done <- db.RunCommand(ctx, cmd).Decode(&out)
			}()
			mustRun(t, admin, bson.D{{Key: "ping", Value: 1}})
			select {
			case err := <-done:
				wantExprStop(t, err)
			case <-time.After(testload.Timeout(10 * time.Second)):
				t.Fatalf("no answer after %v", time.Since(start))
			}
		})
	}
}

// TestKillOpStopsAnExpressionBomb: killOp stops an endless expression
// with Interrupted.
func TestKillOpStopsAnExpressionBomb(t *testing.T) {
	ts, _ := bombFixture(t)
	admin := ts.client().Database("admin")
	bomber := ts.client(options.Client().SetAppName("bomber")).Database("bomb")
	cmd := bombCommand(t, exprBombs["endless project"], 0)
	done := make(chan error, 1)
	go func() {
		var out bson.M
		done <- bomber.RunCommand(ctx, cmd).Decode(&out)
	}()
	op := waitForOp(t, admin, bson.D{{Key: "appName", Value: "bomber"}, {Key: "command.aggregate", Value: "c"}}, true)
	mustRun(t, admin, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: get(op, "opid")}})
	select {
	case err := <-done:
		wantCode(t, err, int32(mongoerr.Interrupted), "Interrupted")
	case <-time.After(testload.Timeout(10 * time.Second)):
		t.Fatal("no answer after killOp")
	}
	waitForOp(t, admin, bson.D{{Key: "appName", Value: "bomber"}, {Key: "command.aggregate", Value: "c"}}, false)
}

// TestHangUpStopsAnExpressionBomb: a client that closes its connection
// stops its endless expression.
func TestHangUpStopsAnExpressionBomb(t *testing.T) {
	ts, _ := bombFixture(t)
	admin := ts.client().Database("admin")
	nc := ts.dial()
	rawRoundTrip(t, nc, bsoncore.NewDocumentBuilder().AppendInt32("hello", 1).AppendString("$db", "admin").
		AppendDocument("client", bsoncore.NewDocumentBuilder().AppendDocument("application",
			bsoncore.NewDocumentBuilder().AppendString("name", "leaver").Build()).Build()).Build())
	cmd, err := bson.Marshal(append(bombCommand(t, exprBombs["endless project"], 0), bson.E{Key: "$db", Value: "bomb"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := wire.Write(nc, 2, 0, &wire.Msg{Body: cmd}, wire.CompressorNoop); err != nil {
		t.Fatal(err)
	}
	waitForOp(t, admin, bson.D{{Key: "appName", Value: "leaver"}, {Key: "command.aggregate", Value: "c"}}, true)
	nc.Close()
	waitForOp(t, admin, bson.D{{Key: "appName", Value: "leaver"}, {Key: "command.aggregate", Value: "c"}}, false)
}
