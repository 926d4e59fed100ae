package main

import (
	"context"
	"regexp"
	"syscall"
	"testing"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// debugLines counts the debug lines of a component in a log.
func debugLines(log, component string) int {
	return len(regexp.MustCompile(`"s":"D\d","c":"`+component+`"`).FindAllString(log, -1))
}

// TestComponentVerbosity: a component's verbosity from the config file
// keeps its debug lines and no other component's; logComponentVerbosity
// changes them while running, getParameter shows them nested as mongod
// nests them, and a bad component is refused.
func TestComponentVerbosity(t *testing.T) {
	conf := writeConfig(t, `
systemLog:
  verbosity: 0
  component:
    command:
      verbosity: 1
`)
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir, "--config", conf)
	c := client(t, p)
	ctx := context.Background()
	admin := c.Database("admin")
	if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if admin.RunCommand(ctx, bson.D{{Key: "noSuchCommand", Value: 1}}).Err() == nil {
		t.Fatal("an unknown command ran")
	}
	var got struct {
		V bson.M `bson:"logComponentVerbosity"`
	}
	if err := admin.RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "logComponentVerbosity", Value: 1}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if get(got.V, "verbosity") != int32(0) || get(got.V, "command", "verbosity") != int32(1) ||
		get(got.V, "storage", "verbosity") != int32(-1) || get(got.V, "replication", "election", "verbosity") != int32(-1) {
		t.Fatalf("getParameter logComponentVerbosity: %v", got.V)
	}
	err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1},
		{Key: "logComponentVerbosity", Value: bson.M{"nosuch": bson.M{"verbosity": 1}}}}).Err()
	if err == nil {
		t.Fatal("an unknown component was taken")
	}
	var was bson.M
	if err := admin.RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "logComponentVerbosity",
		Value: bson.M{"command": bson.M{"verbosity": -1}, "storage": bson.M{"verbosity": 1}}}}).Decode(&was); err != nil {
		t.Fatal(err)
	}
	if get(was, "was", "command", "verbosity") != int32(1) {
		t.Fatalf("setParameter's was: %v", was)
	}
	if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.M{"_id": 2}); err != nil {
		t.Fatal(err)
	}
	failedBefore := debugLines(p.Output(), "COMMAND")
	if failedBefore == 0 {
		t.Fatalf("no COMMAND debug line at command verbosity 1:\n%s", p.Output())
	}
	if n := debugLines(p.Output(), "STORAGE") + debugLines(p.Output(), "NETWORK"); n != 0 {
		t.Fatalf("%d debug lines of components at verbosity 0", n)
	}
	admin.RunCommand(ctx, bson.D{{Key: "noSuchCommand", Value: 1}})
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	out := p.Output()
	if debugLines(out, "COMMAND") != failedBefore {
		t.Errorf("COMMAND debug lines after its verbosity went back to the global 0:\n%s", out)
	}
	if debugLines(out, "STORAGE") == 0 {
		t.Errorf("no STORAGE debug line (the checkpoint at stop) at storage verbosity 1:\n%s", out)
	}
}

// get follows a path of keys through nested documents.
func get(doc any, path ...string) any {
	for _, k := range path {
		switch d := doc.(type) {
		case bson.M:
			doc = d[k]
		case bson.D:
			doc = nil
			for _, e := range d {
				if e.Key == k {
					doc = e.Value
				}
			}
		default:
			return nil
		}
	}
	return doc
}
