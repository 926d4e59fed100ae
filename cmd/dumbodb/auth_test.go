package main

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"dumbodb/internal/dumboproc"
)

// TestUsersSurviveKill9: a user whose createUser was acknowledged logs in
// after SIGKILL and a restart; the localhost exception does not come back.
func TestUsersSurviveKill9(t *testing.T) {
	dir := t.TempDir()
	p := dumboproc.StartT(t, dir, "--auth")
	if r := rawCommand(t, p.Addr(), bson.D{{Key: "createUser", Value: "ops"}, {Key: "pwd", Value: "s3cret"},
		{Key: "roles", Value: bson.A{"root"}}, {Key: "$db", Value: "admin"}}); r["ok"] != 1.0 {
		t.Fatalf("createUser: %v", r)
	}
	p.Kill()
	p = dumboproc.StartT(t, dir, "--auth")
	if r := rawCommand(t, p.Addr(), bson.D{{Key: "createUser", Value: "intruder"}, {Key: "pwd", Value: "x"},
		{Key: "roles", Value: bson.A{"root"}}, {Key: "$db", Value: "admin"}}); r["codeName"] != "Unauthorized" {
		t.Fatalf("createUser without a login after the restart: %v", r)
	}
	ctx := context.Background()
	client, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(10 * time.Second).
		SetAuth(options.Credential{Username: "ops", Password: "s3cret", AuthSource: "admin"}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	if _, err := client.Database("db").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("login after kill -9: %v\n%s", err, p.Output())
	}
}
