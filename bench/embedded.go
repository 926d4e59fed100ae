package bench

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// The Embedded family: the same operations through a server in
// dumbobench's own process, reached through the embedded package's
// in-memory connections, a Unix socket, and TCP on loopback. It
// measures what the network costs a client, and what embedding saves.

// EmbeddedServer starts a server in this process reached through
// transport ("Embedded", "Unix" or "TCP") and returns a client of it and
// what stops both.
type EmbeddedServer func(ctx context.Context, transport string) (*mongo.Client, func(), error)

var embeddedTransports = []string{"Embedded", "Unix", "TCP"}

func embeddedBenchmarks() []Benchmark {
	var bs []Benchmark
	for _, op := range []string{"FindOne", "InsertOne", "Find100"} {
		for _, tr := range embeddedTransports {
			bs = append(bs, Benchmark{Name: "Embedded/" + op + "/" + tr, Group: GroupEmbedded, Unit: "op",
				Machine: true, Setup: embeddedSetup(op, tr)})
		}
	}
	return bs
}

func embeddedSetup(op, transport string) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if e.Cfg.Embedded == nil {
			return nil, errNotApplicable{"needs dumbobench's in-process server"}
		}
		client, stop, err := e.Cfg.Embedded(ctx, transport)
		if err != nil {
			return nil, err
		}
		coll := client.Database("bench").Collection("embedded")
		call, err := embeddedCall(ctx, coll, op)
		if err != nil {
			stop()
			return nil, err
		}
		return &Workload{Call: call, Close: stop}, nil
	}
}

// embeddedCall seeds coll for op and returns one call of it.
func embeddedCall(ctx context.Context, coll *mongo.Collection, op string) (func(context.Context, int64) error, error) {
	docs := make([]any, 100)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: -1 - i}, {Key: "v", Value: "x"}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		return nil, err
	}
	switch op {
	case "FindOne":
		return func(ctx context.Context, _ int64) error {
			return coll.FindOne(ctx, bson.D{{Key: "_id", Value: -1}}).Err()
		}, nil
	case "InsertOne":
		return func(ctx context.Context, n int64) error {
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: n}, {Key: "v", Value: "x"}})
			return err
		}, nil
	}
	filter := bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 0}}}}
	return func(ctx context.Context, _ int64) error {
		cur, err := coll.Find(ctx, filter)
		if err != nil {
			return err
		}
		var got []bson.Raw
		if err := cur.All(ctx, &got); err != nil {
			return err
		}
		if len(got) != 100 {
			return fmt.Errorf("find: %d documents, want 100", len(got))
		}
		return nil
	}, nil
}
