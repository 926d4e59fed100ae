package query

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// CurrentOpFilter is what $currentOp reports: every user's operations
// or the current user's, and whether idle connections, idle cursors and
// idle sessions are listed too.
type CurrentOpFilter struct {
	AllUsers, IdleConnections, IdleCursors, IdleSessions bool
}

// compileCurrentOpStage is $currentOp: the server's operations in
// progress (its CurrentOp), run on admin with {aggregate: 1}, as mongod
// requires.
func compileCurrentOpStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if pc.opts.DB != "admin" || !pc.opts.Collectionless {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "$currentOp must be run against the 'admin' database with {aggregate: 1}")
	}
	d, ok := spec.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$currentOp options must be specified in an object, but found: %s", value.TypeName(spec.Type))
	}
	f := CurrentOpFilter{IdleSessions: true} // mongod's defaults
	els, _ := d.Elements()
	for _, el := range els {
		v := el.Value()
		var dst *bool
		switch el.Key() {
		case "allUsers":
			dst = &f.AllUsers
		case "idleConnections":
			dst = &f.IdleConnections
		case "idleCursors":
			dst = &f.IdleCursors
		case "idleSessions":
			dst = &f.IdleSessions
		case "localOps":
			dst = new(bool) // a single server's operations are all local
		case "truncateOps", "backtrace":
			// Commands are reported whole, and no operation waits on a
			// lock to trace: false is what this server does, true is refused.
			dst = new(bool)
			if b, _ := v.BooleanOK(); b {
				return nil, mongoerr.New(mongoerr.NotImplemented, "$currentOp's %s: true is not supported by DumboDB", el.Key())
			}
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option '%s' in $currentOp stage.", el.Key())
		}
		b, ok := v.BooleanOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.FailedToParse, "The '%s' parameter of the $currentOp stage must be a boolean value, but found: %s", el.Key(), value.TypeName(v.Type))
		}
		*dst = b
	}
	return func(Stream) Stream {
		if pc.opts.CurrentOp == nil {
			return &sliceStream{}
		}
		docs, err := pc.opts.CurrentOp(f)
		if err != nil {
			return failedStream{err}
		}
		return &sliceStream{docs: docs}
	}, nil
}

// failedStream is a source that could not list its documents.
type failedStream struct{ err error }

func (s failedStream) Next(context.Context) (bsoncore.Document, error) { return nil, s.err }
