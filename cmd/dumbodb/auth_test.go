package main

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testload"
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
	client, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(testload.Timeout(10 * time.Second)).
		SetAuth(options.Credential{Username: "ops", Password: "s3cret", AuthSource: "admin"}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	if _, err := client.Database("db").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("login after kill -9: %v\n%s", err, p.Output())
	}
}

// TestInitialUserFromEnvironment: DUMBODB_ROOT_USERNAME and
// DUMBODB_ROOT_PASSWORD make the first user, a root of admin, only while no
// user exists; one variable without the other stops the server.
func TestInitialUserFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DUMBODB_ROOT_USERNAME", "admin")
	t.Setenv("DUMBODB_ROOT_PASSWORD", "first")
	p := dumboproc.StartT(t, dir, "--auth")
	login := func(pwd string) error {
		ctx := context.Background()
		client, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(testload.Timeout(10 * time.Second)).
			SetAuth(options.Credential{Username: "admin", Password: pwd, AuthSource: "admin"}))
		if err != nil {
			return err
		}
		defer client.Disconnect(ctx)
		return client.Database("db").RunCommand(ctx, bson.D{{Key: "dbStats", Value: 1}}).Err()
	}
	if err := login("first"); err != nil {
		t.Fatalf("the user from the environment: %v\n%s", err, p.Output())
	}
	p.StopT(t, syscall.SIGTERM)
	t.Setenv("DUMBODB_ROOT_PASSWORD", "second")
	p = dumboproc.StartT(t, dir, "--auth")
	if err := login("first"); err != nil {
		t.Fatalf("a restart with other variables changed the user: %v", err)
	}
	p.StopT(t, syscall.SIGTERM)
	t.Setenv("DUMBODB_ROOT_PASSWORD", "")
	if _, err := dumboproc.Start(context.Background(), dumboproc.Binary(t), dir, nil, "--auth"); err == nil {
		t.Fatal("a user name without a password did not stop the server")
	}
}
