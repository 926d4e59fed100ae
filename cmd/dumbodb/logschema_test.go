package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/logschema"
	"github.com/dumbodb/dumbodb/internal/testload"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Every server the tests start with dumboproc.StartT has its log checked
// against mongod's schema when the test ends; this test adds the lines the
// other tests' servers seldom write, so that they are checked too.

// TestLogLinesFollowMongodSchema: with every line turned on (debug and
// trace, every command a slow query, those on a database as well as on a
// collection), a client naming its application, a command past the
// 10 KiB a slow query shows whole, a failed write, an unknown command and a
// rotation, every line of the log file, of the file rotated aside and of
// getLog follows mongod's schema.
func TestLogLinesFollowMongodSchema(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "dumbodb.log")
	p := dumboproc.StartT(t, filepath.Join(dir, "data"), "--logpath", logPath, "-vv", "--slowms", "0")
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetAppName("logschema").SetTimeout(testload.Timeout(20 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(ctx)
	coll := c.Database("logs").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "pad", Value: strings.Repeat("x", 20<<10)}}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err == nil {
		t.Fatal("a duplicate _id was inserted")
	}
	admin := c.Database("admin")
	if err := admin.RunCommand(ctx, bson.D{{Key: "noSuchCommand", Value: 1}}).Err(); err == nil {
		t.Fatal("an unknown command succeeded")
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "logRotate", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	var got struct{ Log []string }
	if err := admin.RunCommand(ctx, bson.D{{Key: "getLog", Value: "global"}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	for _, line := range got.Log {
		if err := logschema.CheckLine([]byte(line)); err != nil {
			t.Errorf("getLog: %v\n  %s", err, line)
		}
	}
	c.Disconnect(ctx)
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}
	files, _ := filepath.Glob(logPath + "*")
	if len(files) < 2 {
		t.Fatalf("log files %v, want the file rotated aside and the new one", files)
	}
	all := ""
	for _, f := range files {
		if err := logschema.CheckFile(f); err != nil {
			t.Error(err)
		}
		data, _ := os.ReadFile(f)
		all += string(data)
	}
	// The lines this test is for were written, or the check proves nothing.
	for _, want := range []string{`"client metadata"`, `"ns":"admin.$cmd"`, `"ns":"logs.c","command":{"insert":"c"},"truncated":true`, `"msg":"command failed"`, `"s":"D1"`} {
		if !strings.Contains(all, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}

// TestLoggerLinesFollowMongodSchema: the lines newLogger writes follow
// mongod's schema, those the server logs without a component or a
// message included.
func TestLoggerLinesFollowMongodSchema(t *testing.T) {
	var out strings.Builder
	log := newLogger(&out).Level(zerolog.TraceLevel)
	log.Info().Str("c", "NETWORK").Str("remote", "127.0.0.1:5").Int("connectionId", 1).Msg("Connection accepted")
	log.Info().Str("c", "NETWORK").Str("ctx", "conn1").Str("client", `{"application": {"name": "app"}}`).Msg("client metadata")
	log.Info().Str("c", "COMMAND").Str("ctx", "conn1").Str("type", "command").Str("ns", "admin.$cmd").
		RawJSON("command", []byte(`{"ping":1}`)).Dur("durationMillis", 1500*time.Microsecond).Msg("Slow query")
	log.Warn().Str("db", "shop").Msg("no component")
	log.Error().Str("c", "STORAGE").Msg("")
	log.Trace().Str("c", "STORAGE").Msg("trace")
	if err := logschema.Check(strings.NewReader(out.String())); err != nil {
		t.Error(err)
	}
}
