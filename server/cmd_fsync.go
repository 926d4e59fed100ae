package server

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
)

// fsync and fsyncUnlock: flushing every database to its files and, with
// lock, freezing the data directory for a copy (storage/freeze.go). While
// it is frozen, writes wait and reads go on; locks nest, and the
// directory changes again when fsyncUnlock has taken the last away.

// defaultFsyncLockTimeout is how long fsync with lock waits for the
// writes in progress when fsyncLockAcquisitionTimeoutMillis is not given
// (mongod's 90 s).
const defaultFsyncLockTimeout = 90 * time.Second

const fsyncSeeAlso = "https://dochub.mongodb.org/core/fsynccommand"

// cmdFsync is {fsync: 1, lock?, fsyncLockAcquisitionTimeoutMillis?}.
func cmdFsync(r *request) (bsoncore.Document, error) {
	var lock bool
	timeoutMillis := defaultFsyncLockTimeout.Milliseconds()
	err := r.parseArgs(map[string]fieldHandler{
		"lock":                              r.boolArg("lock", &lock),
		"fsyncLockAcquisitionTimeoutMillis": r.nonNegativeArg("fsyncLockAcquisitionTimeoutMillis", &timeoutMillis),
	})
	if err != nil {
		return nil, err
	}
	engine := r.c.s.engine
	if !lock {
		if err := engine.Flush(r.ctx); err != nil {
			return nil, err
		}
		return bsoncore.NewDocumentBuilder().AppendInt32("numFiles", 1).AppendDouble("ok", 1).Build(), nil
	}
	ctx, cancel := context.WithTimeout(r.ctx, time.Duration(timeoutMillis)*time.Millisecond)
	defer cancel()
	count, err := engine.Freeze(ctx)
	if errors.Is(err, context.DeadlineExceeded) && r.ctx.Err() == nil {
		return nil, mongoerr.New(mongoerr.LockTimeout, "fsync lock was not acquired within fsyncLockAcquisitionTimeoutMillis: writes in progress did not finish")
	}
	if err != nil {
		return nil, err
	}
	r.c.s.log.Info().Str("c", "COMMAND").Int("lockCount", count).Msg("mongod is locked and no writes are allowed")
	return bsoncore.NewDocumentBuilder().
		AppendString("info", "now locked against writes, use db.fsyncUnlock() to unlock").
		AppendInt64("lockCount", int64(count)).
		AppendString("seeAlso", fsyncSeeAlso).
		AppendDouble("ok", 1).Build(), nil
}

// cmdFsyncUnlock is {fsyncUnlock: 1}: one fsync lock fewer.
func cmdFsyncUnlock(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(map[string]fieldHandler{}); err != nil {
		return nil, err
	}
	count, err := r.c.s.engine.Thaw()
	if errors.Is(err, storage.ErrNotFrozen) {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "fsyncUnlock called when not locked")
	}
	if err != nil {
		return nil, err
	}
	r.c.s.log.Info().Str("c", "COMMAND").Int("lockCount", count).Msg("fsyncUnlock completed")
	return bsoncore.NewDocumentBuilder().
		AppendString("info", "fsyncUnlock completed").
		AppendInt64("lockCount", int64(count)).
		AppendDouble("ok", 1).Build(), nil
}
