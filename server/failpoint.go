package server

import (
	"context"
	"sync"
	"time"

	"github.com/dumbodb/dumbodb/interrupt"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// failCommand is mongod's "failCommand" fail point, a test command (on
// only with --enableTestCommands) that makes chosen commands fail or drop
// the connection, so that drivers' error handling can be tested.
type failCommand struct {
	mu sync.Mutex
	failConfig
}

// failConfig is the fail point's setting.
type failConfig struct {
	remaining   int // calls left to fail; -1: always; 0: off
	skip        int // matching calls to let through first
	commands    map[string]bool
	appName     string
	errorCode   int32
	errorLabels bsoncore.Array
	wcError     bsoncore.Document
	closeConn   bool
	block       time.Duration
}

// failure is what a triggered fail point does to one command.
type failure struct {
	block     time.Duration // first wait this long (the operation can be killed meanwhile)
	closeConn bool          // then close the connection without a reply
	err       error         // or fail with this error
	// wcError, when set, is added to the reply of the command, which runs
	// (a write concern error comes after the write, as on mongod).
	wcError bsoncore.Document
	// labels replace the labels of err or wcError (nil: none given,
	// errorLabels decides them).
	labels bsoncore.Array
}

// trigger reports whether the fail point fires for a command.
func (f *failCommand) trigger(cmd, appName string) (failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.commands[cmd] || (f.appName != "" && f.appName != appName) || !pass(&f.skip, &f.remaining) {
		return failure{}, false
	}
	switch {
	case f.closeConn:
		return failure{block: f.block, closeConn: true}, true
	case f.wcError != nil:
		return failure{block: f.block, wcError: f.wcError, labels: f.errorLabels}, true
	case f.errorCode != 0:
		err := mongoerr.New(mongoerr.Code(f.errorCode), "Failing command via 'failCommand' failpoint")
		return failure{block: f.block, err: err, labels: f.errorLabels}, true
	}
	return failure{block: f.block}, f.block > 0 // only a delay was asked for
}

// wait blocks the command for the fail point's delay, or until its
// operation is killed or its client hangs up.
func (f failure) wait(ctx context.Context) error {
	if f.block <= 0 {
		return nil
	}
	t := time.NewTimer(f.block)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return interrupt.Err(ctx)
	}
}

// withField is doc with the field key: v added last.
func withField(doc bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendValue(key, v).Build()
}

// failPointSetter sets a fail point to a mode (times -1: always; skip:
// passes to let through first) with its data.
type failPointSetter func(s *Server, times, skip int, data bsoncore.Document) error

// failPoints are the fail points configureFailPoint sets, by name.
var failPoints = map[string]failPointSetter{
	"failCommand": func(s *Server, times, skip int, data bsoncore.Document) error {
		return s.failCommand.configure(times, skip, data)
	},
	"onPrimaryTransactionalWrite": func(s *Server, times, skip int, data bsoncore.Document) error {
		s.retryFailPoint.configure(times, skip, data)
		return nil
	},
	"failGetMoreAfterCursorCheckout": func(s *Server, times, skip int, data bsoncore.Document) error {
		s.getMoreFailPoint.configure(times, skip, data)
		return nil
	},
	"maxTimeAlwaysTimeOut": func(s *Server, times, skip int, _ bsoncore.Document) error {
		s.maxTimeFailPoint.configure(times, skip)
		return nil
	},
	"dumboPanic": configurePanic,
}

func cmdConfigureFailPoint(r *request) (bsoncore.Document, error) {
	if !r.c.s.cfg.TestCommands {
		return nil, mongoerr.New(mongoerr.CommandNotFound, "no such command: 'configureFailPoint'")
	}
	name, _ := r.cmd.Index(0).Value().StringValueOK()
	set, ok := failPoints[name]
	if !ok {
		return nil, mongoerr.New(mongoerr.BadValue, "unknown fail point: %s", name)
	}
	var data bsoncore.Document
	var mode bsoncore.Value
	err := r.parseArgs(map[string]fieldHandler{
		"mode": func(v bsoncore.Value) error { mode = v; return nil },
		"data": r.docArg("data", &data),
	})
	if err != nil {
		return nil, err
	}
	times, skip, err := failPointMode(mode)
	if err != nil {
		return nil, err
	}
	if err := set(r.c.s, times, skip, data); err != nil {
		return nil, err
	}
	return okReply(), nil
}

// configurePanic sets DumboDB's "dumboPanic" fail point: the storage engine
// panics at data.step (one of storage.PanicSteps), to test that a panic
// releases every lock and leaves the server working.
func configurePanic(s *Server, times, skip int, data bsoncore.Document) error {
	if skip > 0 {
		return mongoerr.New(mongoerr.BadValue, "dumboPanic takes mode 'alwaysOn', 'off' or {times: n}")
	}
	step, _ := data.Lookup("step").StringValueOK()
	if err := s.engine.InjectPanic(step, times); err != nil {
		return mongoerr.New(mongoerr.BadValue, "%v", err)
	}
	return nil
}

// failPointMode reads a fail point's mode as mongod does: "alwaysOn",
// "off", {times: n} (the next n passes), or {skip: n} (on after the next
// n passes). times is -1 for always.
func failPointMode(mode bsoncore.Value) (times, skip int, err error) {
	if s, ok := mode.StringValueOK(); ok {
		switch s {
		case "alwaysOn":
			return -1, 0, nil
		case "off":
			return 0, 0, nil
		}
	}
	if d, ok := mode.DocumentOK(); ok {
		if n, ok := value.AsInt64(d.Lookup("times")); ok && n >= 0 {
			return int(n), 0, nil
		}
		if n, ok := value.AsInt64(d.Lookup("skip")); ok && n >= 0 {
			return -1, int(n), nil
		}
	}
	return 0, 0, mongoerr.New(mongoerr.BadValue, "mode must be 'alwaysOn', 'off', {times: n} or {skip: n}")
}

// pass counts one pass through a fail point: whether it fires, given the
// passes left to skip and to fire (-1: always).
func pass(skip, remaining *int) bool {
	switch {
	case *remaining == 0:
		return false
	case *skip > 0:
		*skip--
		return false
	case *remaining > 0:
		*remaining--
	}
	return true
}

func (f *failCommand) configure(times, skip int, data bsoncore.Document) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failConfig = failConfig{remaining: times, skip: skip, commands: map[string]bool{}}
	if cmds, ok := data.Lookup("failCommands").ArrayOK(); ok {
		vals, _ := cmds.Values()
		for _, v := range vals {
			f.commands[canonicalCommand(v.StringValue())] = true
		}
	}
	if code, ok := value.AsInt64(data.Lookup("errorCode")); ok {
		f.errorCode = int32(code)
	}
	f.errorLabels, _ = data.Lookup("errorLabels").ArrayOK()
	f.wcError, _ = data.Lookup("writeConcernError").DocumentOK()
	f.closeConn, _ = asBool(data.Lookup("closeConnection"))
	f.appName, _ = data.Lookup("appName").StringValueOK()
	if blocked, _ := asBool(data.Lookup("blockConnection")); blocked {
		ms, _ := value.AsInt64(data.Lookup("blockTimeMS"))
		f.block = time.Duration(ms) * time.Millisecond
	}
	return nil
}

// getMoreFailPoint is mongod's failGetMoreAfterCursorCheckout: a getMore
// fails once it has its cursor, with data.errorCode (InternalError when
// none is given).
type getMoreFailPoint struct {
	mu              sync.Mutex
	remaining, skip int
	code            mongoerr.Code
}

func (f *getMoreFailPoint) configure(times, skip int, data bsoncore.Document) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remaining, f.skip, f.code = times, skip, mongoerr.InternalError
	if code, ok := value.AsInt64(data.Lookup("errorCode")); ok {
		f.code = mongoerr.Code(code)
	}
}

// trigger is the error of a getMore that meets the fail point (nil: none).
func (f *getMoreFailPoint) trigger() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !pass(&f.skip, &f.remaining) {
		return nil
	}
	return mongoerr.New(f.code, "Hit the 'failGetMoreAfterCursorCheckout' failpoint")
}

// maxTimeFailPoint is mongod's maxTimeAlwaysTimeOut: an operation with a
// time limit exceeds it at once. mongod consults it whenever an
// operation with a deadline checks for interruption, which a command
// first does before it runs, and a getMore once it has its cursor: one
// pass each here.
type maxTimeFailPoint struct {
	mu              sync.Mutex
	remaining, skip int
}

func (f *maxTimeFailPoint) configure(times, skip int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remaining, f.skip = times, skip
}

// expired counts the pass of an operation with a time limit: its
// MaxTimeMSExpired when the fail point fires (nil: it runs).
func (f *maxTimeFailPoint) expired() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !pass(&f.skip, &f.remaining) {
		return nil
	}
	return mongoerr.Interruption(context.DeadlineExceeded)
}

// getMoreFailure is the error a fail point gives a getMore that has its
// cursor (nil: none), in mongod's order: maxTimeAlwaysTimeOut for a
// cursor whose command had a time limit (a getMore's own maxTimeMS is how
// long an awaitData cursor waits, no limit), then
// failGetMoreAfterCursorCheckout.
func (r *request) getMoreFailure(cur *cursor) error {
	if cur.timeLimited && !cur.awaitData() {
		if err := r.c.s.maxTimeFailPoint.expired(); err != nil {
			return err
		}
	}
	return r.c.s.getMoreFailPoint.trigger()
}

// awaitData reports whether a getMore of the cursor waits for news: a
// change stream's, or a tailable find's with awaitData.
func (c *cursor) awaitData() bool { return c.stream != nil || (c.tail != nil && c.tail.await) }
