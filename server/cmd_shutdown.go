package server

import (
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The shutdown command and the admin commands that report what DumboDB
// does not have (a lock manager, outgoing connection pools), in mongod's
// shapes.

// ShutdownRequest is what a shutdown command asked: how long connections
// may take to finish their commands (0 with force: none).
type ShutdownRequest struct {
	Timeout time.Duration
	Force   bool
}

// DefaultShutdownTimeout is how long a shutdown command lets commands in
// flight finish when it names no timeoutSecs (mongod's 15 s).
const DefaultShutdownTimeout = 15 * time.Second

// shutdownSignal carries the first shutdown command to the process.
type shutdownSignal struct {
	once sync.Once
	ch   chan ShutdownRequest
}

// ShutdownRequested delivers the first shutdown command's request; the
// process that runs the server stops it then, as it does on SIGTERM.
func (s *Server) ShutdownRequested() <-chan ShutdownRequest { return s.shutdownSig.ch }

// cmdShutdown is {shutdown: 1, force?, timeoutSecs?}: on admin, from this
// host when access control is off (mongod's rule) or by a user with the
// shutdown action. Like mongod, it answers nothing: the connection closes
// as the server stops.
func cmdShutdown(r *request) (bsoncore.Document, error) {
	req := ShutdownRequest{Timeout: DefaultShutdownTimeout}
	err := r.parseArgs(map[string]fieldHandler{
		"force": r.boolArg("force", &req.Force),
		"timeoutSecs": func(v bsoncore.Value) error {
			secs, ok := value.AsInt64(v)
			if !ok || secs < 0 {
				return mongoerr.New(mongoerr.BadValue, "timeoutSecs must be a non-negative number")
			}
			req.Timeout = time.Duration(secs) * time.Second
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if !r.c.s.cfg.Auth && !r.c.fromThisHost() {
		return nil, mongoerr.New(mongoerr.Unauthorized, "shutdown must run from localhost when running db without auth")
	}
	if req.Force {
		req.Timeout = 0
	}
	r.c.s.log.Info().Str("c", "COMMAND").Bool("force", req.Force).Dur("timeoutMillis", req.Timeout).
		Msg("Terminating via shutdown command")
	r.c.s.shutdownSig.once.Do(func() { r.c.s.shutdownSig.ch <- req })
	return nil, nil // no reply: the connection closes
}

// cmdLockInfo is lockInfo: the locks held, none of mongod's kind (DumboDB
// has no lock manager; its writers queue on each branch's own lock).
func cmdLockInfo(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(map[string]fieldHandler{}); err != nil {
		return nil, err
	}
	return bsoncore.NewDocumentBuilder().AppendArray("lockInfo", bsoncore.NewArrayBuilder().Build()).
		AppendDouble("ok", 1).Build(), nil
}

// cmdConnPoolStats is connPoolStats: the server's pools of outgoing
// connections to other mongod's, of which DumboDB has none.
func cmdConnPoolStats(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(map[string]fieldHandler{}); err != nil {
		return nil, err
	}
	empty := bsoncore.NewDocumentBuilder().Build()
	return bsoncore.NewDocumentBuilder().
		AppendInt32("numClientConnections", 0).AppendInt32("numAScopedConnections", 0).
		AppendInt32("totalInUse", 0).AppendInt32("totalAvailable", 0).AppendInt32("totalLeased", 0).
		AppendInt32("totalCreated", 0).AppendInt32("totalRefreshing", 0).AppendInt32("totalRefreshed", 0).
		AppendDocument("pools", empty).AppendDocument("hosts", empty).AppendDocument("replicaSets", empty).
		AppendDouble("ok", 1).Build(), nil
}

// cmdLogRotate is logRotate: the log file is rotated as --logRotate
// says (rename: the current file gets a time suffix and a new one
// starts; reopen: the file is opened again, after an outside tool moved
// it). A log that is no file of the server's (standard output) has
// nothing to rotate.
func cmdLogRotate(r *request) (bsoncore.Document, error) {
	if err := r.parseArgs(map[string]fieldHandler{}); err != nil {
		return nil, err
	}
	if rotate := r.c.s.cfg.RotateLog; rotate != nil {
		if err := rotate(); err != nil {
			return nil, mongoerr.New(mongoerr.OperationFailed, "log rotation failed: %v", err)
		}
	}
	return okReply(), nil
}
