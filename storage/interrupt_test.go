package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestReadsInterrupted: a collection scan (even one whose filter rejects
// every document), an index scan and an index build stop with
// MaxTimeMSExpired, MongoDB's error and not the context's, once their
// context's deadline has passed, checkpointed entries and edits alike.
func TestReadsInterrupted(t *testing.T) {
	d := openDatabase(t, Options{})
	a := func(id int32) int32 { return id % 300 }
	insertIndexedOnA(t, d, 0, 2000, a)
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	insertIndexedOnA(t, d, 2000, 4000, a)
	expired, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	<-expired.Done()
	snap := mainSnapshot(t, d)
	reads := map[string]func() error{
		"scan": func() error {
			it, err := snap.Scan(ctx, "c")
			if err != nil {
				return err
			}
			_, err = it.NextWhere(expired, func(bsoncore.Document) bool { return false })
			return err
		},
		"index scan": func() error {
			it, err := snap.IndexScan(ctx, "c", "a_1", index.Interval{Start: []byte{1}, Stop: []byte{0xFF, 0xFF}})
			if err != nil {
				return err
			}
			for {
				if _, _, err := it.Next(expired); err != nil {
					return err
				}
			}
		},
		"index build": func() error {
			_, err := PrepareIndexes(expired, snap, "c", []bsoncore.Document{indexSpec("u_1", true, "u")})
			return err
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			var me *mongoerr.Error
			if err := read(); !errors.As(err, &me) || me.Code != mongoerr.MaxTimeMSExpired {
				t.Fatalf("got %v, want MaxTimeMSExpired", err)
			}
		})
	}
}
