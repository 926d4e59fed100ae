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
	block     time.Duration     // first wait this long (the operation can be killed meanwhile)
	reply     bsoncore.Document // nil: no reply, close the connection
	closeConn bool
	// wcError, when set, is added to the reply of the command, which runs
	// (a write concern error comes after the write, as on mongod).
	wcError bsoncore.Document
	labels  bsoncore.Array
}

// trigger reports whether the fail point fires for a command.
func (f *failCommand) trigger(cmd, appName string) (failure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.commands[cmd] || (f.appName != "" && f.appName != appName) || !pass(&f.skip, &f.remaining) {
		return failure{}, false
	}
	if f.closeConn {
		return failure{block: f.block, closeConn: true}, true
	}
	if f.wcError != nil {
		return failure{block: f.block, wcError: f.wcError, labels: f.errorLabels}, true
	}
	if f.errorCode == 0 {
		return failure{block: f.block}, f.block > 0 // only a delay was asked for
	}
	reply := errorReply(mongoerr.New(mongoerr.Code(f.errorCode), "Failing command via 'failCommand' failpoint"))
	if f.errorLabels != nil {
		reply = withField(reply, "errorLabels", bsoncore.Value{Type: bsoncore.TypeArray, Data: f.errorLabels})
	}
	return failure{block: f.block, reply: reply}, true
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

// addWriteConcernError adds the fail point's write concern error to a
// successful reply, with its labels, or RetryableWriteError for a
// retryable write whose error is in the RetriableError category, as
// mongod labels it.
func (f failure) addWriteConcernError(r *request, reply bsoncore.Document) bsoncore.Document {
	reply = withField(reply, "writeConcernError", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: f.wcError})
	labels := f.labels
	if labels == nil && r.retry != nil && retriable(f.wcError.Lookup("code")) {
		labels = bsoncore.NewArrayBuilder().AppendString("RetryableWriteError").Build()
	}
	if labels != nil {
		reply = withField(reply, "errorLabels", bsoncore.Value{Type: bsoncore.TypeArray, Data: labels})
	}
	return reply
}

// retriable reports whether an error's code field holds a code of the
// RetriableError category.
func retriable(code bsoncore.Value) bool {
	n, ok := value.AsInt64(code)
	return ok && n == int64(int32(n)) && mongoerr.Code(n).In(mongoerr.RetriableError)
}

func withField(doc bsoncore.Document, key string, v bsoncore.Value) bsoncore.Document {
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendValue(key, v).Build()
}

func cmdConfigureFailPoint(r *request) (bsoncore.Document, error) {
	if !r.c.s.cfg.TestCommands {
		return nil, mongoerr.New(mongoerr.CommandNotFound, "no such command: 'configureFailPoint'")
	}
	name, _ := r.cmd.Index(0).Value().StringValueOK()
	if name != "failCommand" && name != "dumboPanic" && name != "onPrimaryTransactionalWrite" && name != "failGetMoreAfterCursorCheckout" {
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
	switch name {
	case "dumboPanic":
		if skip > 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "dumboPanic takes mode 'alwaysOn', 'off' or {times: n}")
		}
		return configurePanic(r, times, data)
	case "onPrimaryTransactionalWrite":
		r.c.s.retryFailPoint.configure(times, skip, data)
		return okReply(), nil
	case "failGetMoreAfterCursorCheckout":
		r.c.s.getMoreFailPoint.configure(times, skip, data)
		return okReply(), nil
	}
	return okReply(), r.c.s.failCommand.configure(times, skip, data)
}

// configurePanic sets DumboDB's "dumboPanic" fail point: the storage engine
// panics at data.step (one of storage.PanicSteps), to test that a panic
// releases every lock and leaves the server working.
func configurePanic(r *request, times int, data bsoncore.Document) (bsoncore.Document, error) {
	step, _ := data.Lookup("step").StringValueOK()
	if err := r.c.s.engine.InjectPanic(step, times); err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "%v", err)
	}
	return okReply(), nil
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

// retryFailPoint is mongod's "onPrimaryTransactionalWrite" fail point: a
// retryable write closes its connection instead of answering, after its
// write (so that a retry must answer from the recorded outcome), or with
// failBeforeCommitExceptionCode before it (so that nothing was written).
type retryFailPoint struct {
	mu        sync.Mutex
	remaining int // -1: always
	skip      int
	retryFailure
}

// retryFailure is what the fail point does to one retryable write.
type retryFailure struct {
	closeConn bool
	failCode  int32 // failBeforeCommitExceptionCode (0: the write runs)
}

func (f *retryFailPoint) configure(times, skip int, data bsoncore.Document) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.remaining, f.skip, f.retryFailure = times, skip, retryFailure{closeConn: true}
	if b, ok := asBool(data.Lookup("closeConnection")); ok {
		f.closeConn = b
	}
	if code, ok := value.AsInt64(data.Lookup("failBeforeCommitExceptionCode")); ok {
		f.failCode = int32(code)
	}
}

// trigger reports whether a retryable write meets the fail point.
func (f *retryFailPoint) trigger() (retryFailure, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !pass(&f.skip, &f.remaining) {
		return retryFailure{}, false
	}
	return f.retryFailure, true
}

// runRetryFailPoint runs a retryable write under the fail point: a nil
// reply and error close the connection (the client sees a network error).
func (r *request) runRetryFailPoint(f retryFailure) (bsoncore.Document, error) {
	if f.failCode != 0 {
		if f.closeConn {
			return nil, nil
		}
		return nil, mongoerr.New(mongoerr.Code(f.failCode), "Failing write for test")
	}
	reply, err := r.runHandler()
	if f.closeConn {
		return nil, nil // written, but the client never hears of it
	}
	return reply, err
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
