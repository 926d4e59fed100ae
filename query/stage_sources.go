package query

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The stages that produce their own documents, and so come first:
// $documents, $collStats, $indexStats and $listLocalSessions.

// SessionFilter is which sessions $listLocalSessions and $listSessions
// list: every user's, the users named, or (neither) the current user's.
type SessionFilter struct {
	AllUsers bool
	Users    []SessionUser
}

// SessionUser names a user as the stages do: {user, db}.
type SessionUser struct{ User, DB string }

// compileListSessionsStage is $listLocalSessions and $listSessions: the
// sessions of the filter the stage names, listed by the server.
func compileListSessionsStage(name string) stageCompiler {
	return func(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
		filter, err := parseSessionFilter(name, spec)
		if err != nil {
			return nil, err
		}
		return func(Stream) Stream {
			var docs []bsoncore.Document
			if pc.opts.Sessions != nil {
				docs = pc.opts.Sessions(filter)
			}
			return &sliceStream{docs: docs}
		}, nil
	}
}

// parseSessionFilter reads {allUsers?, users?: [{user, db}]} strictly, as
// mongod's ListSessionsSpec does.
func parseSessionFilter(name string, spec bsoncore.Value) (SessionFilter, error) {
	var f SessionFilter
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		return f, mongoerr.New(mongoerr.TypeMismatch, "%s must take a nested object but found: %s", name, value.Format(spec))
	}
	els, _ := spec.Document().Elements()
	hasUsers := false
	for _, el := range els {
		v := el.Value()
		switch el.Key() {
		case "allUsers":
			b, ok := v.BooleanOK()
			if !ok {
				return f, sessionFieldType(name, "allUsers", v, "bool")
			}
			f.AllUsers = b
		case "users":
			users, err := parseSessionUsers(name, v)
			if err != nil {
				return f, err
			}
			f.Users, hasUsers = users, true
		default:
			return f, mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", name, el.Key())
		}
	}
	if f.AllUsers && hasUsers {
		return f, mongoerr.New(mongoerr.Location31014, "%s may not specify both allUsers and users", name)
	}
	return f, nil
}

// parseSessionUsers reads users: [{user, db}].
func parseSessionUsers(name string, v bsoncore.Value) ([]SessionUser, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, sessionFieldType(name, "users", v, "array")
	}
	vals, _ := arr.Values()
	users := []SessionUser{}
	for _, uv := range vals {
		d, ok := uv.DocumentOK()
		if !ok {
			return nil, sessionFieldType(name, "users", uv, "object")
		}
		user, okU := d.Lookup("user").StringValueOK()
		db, okD := d.Lookup("db").StringValueOK()
		if !okU || !okD {
			return nil, mongoerr.New(mongoerr.Location40414, "BSON field '%s.users.user' and '%s.users.db' are required strings", name, name)
		}
		users = append(users, SessionUser{User: user, DB: db})
	}
	return users, nil
}

func sessionFieldType(name, field string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type '%s'",
		name, field, value.TypeName(v.Type), want)
}

// compileDocumentsStage is $documents: an expression that evaluates to an
// array of documents, which replaces the (empty) input.
func compileDocumentsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	x, err := compileExpr(spec, pc.env.scope())
	if err != nil {
		return nil, err
	}
	return func(Stream) Stream {
		return lazyStream(func(context.Context) (Stream, error) {
			v, err := x.eval(newEvalCtx(bsoncore.NewDocumentBuilder().Build(), pc.env))
			if err != nil {
				return nil, err
			}
			if v.Type != bsoncore.TypeArray {
				return nil, mongoerr.New(mongoerr.Location5858203, "an array is expected")
			}
			var docs []bsoncore.Document
			for _, e := range value.ArrayValues(v.Data) {
				if e.Type != bsoncore.TypeEmbeddedDocument {
					return nil, mongoerr.New(mongoerr.TypeMismatch, "$documents expects an array of objects, found %s", value.TypeName(e.Type))
				}
				docs = append(docs, e.Data)
			}
			return &sliceStream{docs: docs}, nil
		})
	}, nil
}

// now is the current time as a BSON date.
func now() bsoncore.Value { return value.Date(time.Now().UnixMilli()) }

// compileCollStatsStage checks the whole specification, the storageStats
// scale included, before any collection is looked for: mongod checks it
// as it first reads the pipeline.
func compileCollStatsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument {
		// mongod names the element: "$collStats: null".
		return nil, mongoerr.New(mongoerr.Location5447000, "$collStats must take a nested object but found: $collStats: %s", value.Format(spec))
	}
	opts := map[string]bsoncore.Value{}
	it := value.NewIter(spec.Data)
	for {
		k, v, ok := it.Next()
		if !ok {
			break
		}
		switch string(k) {
		case "latencyStats", "storageStats", "count", "queryExecStats":
			if v.Type != bsoncore.TypeEmbeddedDocument {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$collStats.%s' is the wrong type '%s', expected type 'object'", k, value.TypeName(v.Type))
			}
			opts[string(k)] = v
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field '$collStats.%s' is an unknown field.", k)
		}
	}
	scale, err := storageStatsScale(opts["storageStats"])
	if err != nil {
		return nil, err
	}
	return func(Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			d, err := collStats(ctx, pc, opts, scale)
			if err != nil {
				return nil, err
			}
			return &sliceStream{docs: []bsoncore.Document{d}}, nil
		})
	}, nil
}

// storageStatsScale reads storageStats' scale (mongod's StorageStatsSpec:
// a number of at least 1; 1 when absent or null).
func storageStatsScale(spec bsoncore.Value) (int64, error) {
	if spec.Type == 0 {
		return 1, nil
	}
	v, err := bsoncore.Document(spec.Data).LookupErr("scale")
	if err != nil || v.Type == bsoncore.TypeNull {
		return 1, nil
	}
	scale, ok := value.AsInt64(v)
	if !ok || !value.IsNumber(v) {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$collStats.storageStats.scale' is the wrong type '%s', expected types '[long, int, decimal, double]'", value.TypeName(v.Type))
	}
	if scale < 1 {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field 'scale' value must be >= 1, actual value '%d'", scale)
	}
	return scale, nil
}

// collStatsMissing is the error of a figure of a collection that does not
// exist. It arises while the aggregate runs, and mongod gives such errors
// (in the first batch, where $collStats, the first stage, yields its one
// document) the aggregate's context.
func collStatsMissing(what, ns string) error {
	return mongoerr.New(mongoerr.NamespaceNotFound, "PlanExecutor error during aggregation :: caused by :: Unable to retrieve %s in $collStats stage :: caused by :: Collection [%s] not found.", what, ns)
}

func collStats(ctx context.Context, pc *pipeCtx, opts map[string]bsoncore.Value, scale int64) (bsoncore.Document, error) {
	var n int64
	exists := false
	if pc.opts.Catalog != nil {
		var err error
		if n, exists, err = pc.opts.Catalog.Count(ctx, pc.opts.Collection); err != nil {
			return nil, err
		}
	}
	ns := pc.opts.DB + "." + pc.opts.Collection
	b := bsoncore.NewDocumentBuilder().AppendString("ns", ns).AppendString("host", pc.opts.Host).AppendValue("localTime", now())
	if _, ok := opts["latencyStats"]; ok {
		zero := bsoncore.NewDocumentBuilder().AppendInt64("latency", 0).AppendInt64("ops", 0).Build()
		b.AppendDocument("latencyStats", bsoncore.NewDocumentBuilder().AppendDocument("reads", zero).
			AppendDocument("writes", zero).AppendDocument("commands", zero).AppendDocument("transactions", zero).Build())
	}
	if _, ok := opts["storageStats"]; ok {
		if !exists {
			return nil, collStatsMissing("storageStats", ns)
		}
		ss, err := storageStats(ctx, pc, scale, n)
		if err != nil {
			return nil, err
		}
		b.AppendDocument("storageStats", ss)
	}
	if _, ok := opts["count"]; ok {
		if !exists {
			return nil, collStatsMissing("count", ns)
		}
		b.AppendInt64("count", n)
	}
	if _, ok := opts["queryExecStats"]; ok {
		b.AppendDocument("queryExecStats", bsoncore.NewDocumentBuilder().AppendDocument("collectionScans",
			bsoncore.NewDocumentBuilder().AppendInt64("total", 0).AppendInt64("nonTailable", 0).Build()).Build())
	}
	return b.Build(), nil
}

// compileIndexStatsStage reports the one index every collection has.
func compileIndexStatsStage(spec bsoncore.Value, pc *pipeCtx) (stage, error) {
	if spec.Type != bsoncore.TypeEmbeddedDocument || value.ArrayLen(spec.Data) != 0 {
		return nil, mongoerr.New(mongoerr.Location28803, "The $indexStats stage specification must be an empty object")
	}
	return func(Stream) Stream {
		return lazyStream(func(ctx context.Context) (Stream, error) {
			if pc.opts.Catalog == nil {
				return &sliceStream{}, nil
			}
			_, exists, err := pc.opts.Catalog.Count(ctx, pc.opts.Collection)
			if err != nil || !exists {
				return &sliceStream{}, err
			}
			key := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
			d := bsoncore.NewDocumentBuilder().AppendString("name", "_id_").AppendDocument("key", key).
				AppendString("host", pc.opts.Host).
				AppendDocument("accesses", bsoncore.NewDocumentBuilder().AppendInt64("ops", 0).AppendValue("since", now()).Build()).
				AppendDocument("spec", bsoncore.NewDocumentBuilder().AppendInt32("v", 2).AppendDocument("key", key).AppendString("name", "_id_").Build()).
				Build()
			return &sliceStream{docs: []bsoncore.Document{d}}, nil
		})
	}, nil
}

// StorageStatsCatalog is a Catalog that measures its collections, for
// $collStats' storageStats.
type StorageStatsCatalog interface {
	// StorageStats is coll's storageStats document, as collStats shows
	// the same figures, sizes divided by scale.
	StorageStats(ctx context.Context, coll string, scale int64) (bsoncore.Document, error)
}

// storageStats is $collStats' storageStats of a collection of n
// documents, sizes divided by scale; a catalog that cannot measure its
// collections gives zero sizes.
func storageStats(ctx context.Context, pc *pipeCtx, scale, n int64) (bsoncore.Document, error) {
	if sc, ok := pc.opts.Catalog.(StorageStatsCatalog); ok {
		return sc.StorageStats(ctx, pc.opts.Collection, scale)
	}
	ss := bsoncore.NewDocumentBuilder().AppendInt64("size", 0).AppendInt64("count", n).AppendInt64("storageSize", 0)
	appendCapped(ctx, ss, pc)
	return ss.AppendInt32("nindexes", 1).AppendInt64("totalIndexSize", 0).
		AppendInt64("totalSize", 0).AppendDocument("indexSizes", bsoncore.NewDocumentBuilder().AppendInt64("_id_", 0).Build()).
		AppendInt32("scaleFactor", int32(scale)).Build(), nil
}

// CappedCatalog is a Catalog that knows capped collections' limits, for
// $collStats' storageStats.
type CappedCatalog interface {
	// Capped reports whether coll is capped, and its size and max (0:
	// none).
	Capped(ctx context.Context, coll string) (capped bool, size, max int64)
}

// appendCapped adds storageStats' capped (and for a capped collection max
// and maxSize), as mongod's collStats shows them.
func appendCapped(ctx context.Context, b *bsoncore.DocumentBuilder, pc *pipeCtx) {
	cc, ok := pc.opts.Catalog.(CappedCatalog)
	if !ok {
		b.AppendBoolean("capped", false)
		return
	}
	capped, size, max := cc.Capped(ctx, pc.opts.Collection)
	b.AppendBoolean("capped", capped)
	if capped {
		b.AppendInt64("max", max).AppendInt64("maxSize", size)
	}
}
