package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// docSize is a document size of the benchmarks, named as in their names.
type docSize struct {
	name  string
	bytes int
}

var (
	size100B  = docSize{"100B", 100}
	size1KB   = docSize{"1KB", 1 << 10}
	size10KB  = docSize{"10KB", 10 << 10}
	size100KB = docSize{"100KB", 100 << 10}
	size1MB   = docSize{"1MB", 1 << 20}
)

// padFor returns the padding that makes a document of shape
// {_id: int64, n: int64, pad: string} exactly size bytes of BSON, so that
// "1KB" means 1,024 bytes on the wire and on disk.
func padFor(size int) string {
	raw, err := bson.Marshal(sized(0, ""))
	if err != nil {
		panic(err) // a fixed, valid document
	}
	return strings.Repeat("x", max(size-len(raw), 0))
}

func sized(id int64, pad string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "n", Value: id}, {Key: "pad", Value: pad}}
}

// seed inserts count documents made by mk, in batches of 1,000.
func seed(ctx context.Context, coll *mongo.Collection, count int, mk func(i int) any) error {
	const batch = 1000
	docs := make([]any, 0, batch)
	for i := range count {
		docs = append(docs, mk(i))
		if len(docs) == batch || i == count-1 {
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				return fmt.Errorf("seed %s: %w", coll.Name(), err)
			}
			docs = docs[:0]
		}
	}
	return nil
}

// errUnsupported marks a failed feature probe: the server lacks what the
// benchmark needs, whatever kind of error said so.
type errUnsupported struct{ err error }

func (e errUnsupported) Error() string { return e.err.Error() }
func (e errUnsupported) Unwrap() error { return e.err }

func unsupported(what string, err error) error {
	return errUnsupported{fmt.Errorf("%s: %w", what, err)}
}

// errNotApplicable marks a benchmark that cannot run on this target for a
// reason other than the server (its data directory is unknown): n/a.
type errNotApplicable struct{ reason string }

func (e errNotApplicable) Error() string { return e.reason }

// createIndex creates an ascending index on each key, before seeding so
// that a server without secondary indexes fails fast.
func createIndex(ctx context.Context, coll *mongo.Collection, keys ...string) error {
	for _, k := range keys {
		_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: k, Value: 1}}})
		if err != nil {
			return unsupported("createIndexes "+coll.Name()+"."+k, err)
		}
	}
	return nil
}

// findAll runs a find and checks it returned want documents: a server
// that answers fast and wrong must not score.
func findAll(ctx context.Context, coll *mongo.Collection, filter any, want int) error {
	cur, err := coll.Find(ctx, filter, options.Find().SetBatchSize(1000))
	if err != nil {
		return err
	}
	var got []bson.Raw
	if err := cur.All(ctx, &got); err != nil {
		return err
	}
	return expectCount("find", len(got), want)
}

func expectCount(what string, got, want int) error {
	if got != want {
		return fmt.Errorf("%s returned %d documents, want %d", what, got, want)
	}
	return nil
}

// findOne reads one document by _id and checks it is at least minBytes.
func findOne(ctx context.Context, coll *mongo.Collection, id any, minBytes int) error {
	raw, err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
	if err != nil {
		return fmt.Errorf("findOne %v: %w", id, err)
	}
	if len(raw) < minBytes {
		return fmt.Errorf("findOne %v returned %d bytes, want at least %d", id, len(raw), minBytes)
	}
	return nil
}

func expectMatched(res *mongo.UpdateResult, err error) error {
	if err != nil {
		return err
	}
	if res.MatchedCount != 1 {
		return errors.New("update matched no document")
	}
	return nil
}
