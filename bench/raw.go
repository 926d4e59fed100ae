package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// RawPingBenchmark is the raw client's ping: the × ping of the Raw family
// divides by it, as the driver rows' divides by PingBenchmark.
const RawPingBenchmark = "Raw/Ping"

// rawFamily prefixes the names of the benchmarks the raw-wire client runs.
const rawFamily = "Raw/"

// rawBenchmarks measure the goals' CPU and throughput figures through the
// raw-wire client (rawwire.go): the server's cost, with the driver's left out.
func rawBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: RawPingBenchmark, Group: GroupRaw, Unit: "op", Setup: rawPing},
		rawInserts("Raw/Insert/1", 1, 1),
		rawInserts("Raw/Insert/64", 64, 1),
		{Name: "Raw/FindOne/IntId", Group: GroupRaw, Unit: "op", Setup: rawFindOne},
		rawInserts("Raw/InsertMany/1000", 1, 1000),
		{Name: RawUpdateSmall, Group: GroupRaw, Unit: "op", Setup: rawUpdateOneField(1 << 10)},
		{Name: RawUpdateLarge, Group: GroupRaw, Unit: "op", Setup: rawUpdateOneField(8 << 20)},
	}
}

// The one-field updates of the large-document goal: a $set of
// one small field of a document of 1 KB and of 8 MB.
const (
	RawUpdateSmall = "Raw/UpdateOneField/1KB"
	RawUpdateLarge = "Raw/UpdateOneField/8MB"
)

// rawUpdateOneField seeds one document of about size bytes ({_id: 1,
// n, then fields of 1,000-byte strings}) and sets its n to the call's
// number, durably, by _id.
func rawUpdateOneField(size int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if err := seedFieldsDoc(ctx, e, size); err != nil {
			return nil, err
		}
		si, stmt := bsoncore.AppendDocumentStart(nil)
		q, stmt := bsoncore.AppendDocumentElementStart(stmt, "q")
		stmt = bsoncore.AppendInt64Element(stmt, "_id", 1)
		stmt, _ = bsoncore.AppendDocumentEnd(stmt, q)
		u, stmt := bsoncore.AppendDocumentElementStart(stmt, "u")
		set, stmt := bsoncore.AppendDocumentElementStart(stmt, "$set")
		stmt, nAt := appendPatchable(stmt, "n")
		stmt, _ = bsoncore.AppendDocumentEnd(stmt, set)
		stmt, _ = bsoncore.AppendDocumentEnd(stmt, u)
		stmt, _ = bsoncore.AppendDocumentEnd(stmt, si)
		msg, at := frame(updateCommand(e), "updates", [][]byte{stmt})
		cs, err := openRawClients(ctx, e, 1, msg, []int{at[0] + nAt})
		if err != nil {
			return nil, err
		}
		return &Workload{Close: cs.close, Call: func(_ context.Context, n int64) error {
			return cs.do(func(c *rawClient) error {
				setInt64(c.msg, c.ids[0], n+1)
				body, err := c.conn.command(c.msg)
				if err != nil {
					return err
				}
				if got, _ := body.Lookup("nModified").AsInt64OK(); got != 1 {
					return fmt.Errorf("update modified %d documents, want 1: %s", got, body)
				}
				return nil
			})
		}}, nil
	}
}

// seedFieldsDoc inserts one document of about size bytes: {_id: 1, n: 0,
// then fields of 1,000-byte strings}.
func seedFieldsDoc(ctx context.Context, e *Env, size int) error {
	doc := bson.D{{Key: "_id", Value: int64(1)}, {Key: "n", Value: int64(0)}}
	for i := 0; i*1024 < size; i++ {
		doc = append(doc, bson.E{Key: fmt.Sprintf("f%05d", i), Value: strings.Repeat("x", 1000)})
	}
	if _, err := e.Coll.InsertOne(ctx, doc); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	return nil
}

// rawInserts is clients concurrent connections each inserting batch
// documents of 100 B per request, durably.
func rawInserts(name string, clients, batch int) Benchmark {
	unit := "op"
	if batch > 1 {
		unit = "doc"
	}
	return Benchmark{Name: name, Group: GroupRaw, Unit: unit, PerCall: batch, Clients: clients, Setup: rawInsert(clients, batch)}
}

func rawPing(ctx context.Context, e *Env) (*Workload, error) {
	cs, err := openRawClients(ctx, e, 1, simpleCommand("admin", "ping"), nil)
	if err != nil {
		return nil, err
	}
	return &Workload{Close: cs.close, Call: func(context.Context, int64) error {
		return cs.do(func(c *rawClient) error {
			_, err := c.conn.command(c.msg)
			return err
		})
	}}, nil
}

// rawInsert frames one insert of batch documents, in a document
// sequence as drivers send them, with {w: 1, j: true} like every write of
// the suite; a call patches the _ids from its number.
func rawInsert(clients, batch int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		doc, idAt := rawDoc(padFor(size100B.bytes))
		docs := make([][]byte, batch)
		for i := range docs {
			docs[i] = doc
		}
		msg, at := frame(insertCommand(e), "documents", docs)
		for i := range at {
			at[i] += idAt
		}
		cs, err := openRawClients(ctx, e, clients, msg, at)
		if err != nil {
			return nil, err
		}
		return &Workload{Close: cs.close, Call: func(_ context.Context, n int64) error {
			return cs.do(func(c *rawClient) error {
				for i, at := range c.ids {
					setInt64(c.msg, at, n*int64(batch)+int64(i))
				}
				body, err := c.conn.command(c.msg)
				if err != nil {
					return err
				}
				return checkWritten(body, batch)
			})
		}}, nil
	}
}

// rawDoc is a document of sized's shape, {_id, n: 0, pad}, and where its
// _id's value lies in it.
func rawDoc(pad string) ([]byte, int) {
	i, doc := bsoncore.AppendDocumentStart(nil)
	doc, idAt := appendPatchable(doc, "_id")
	doc = bsoncore.AppendInt64Element(doc, "n", 0)
	doc = bsoncore.AppendStringElement(doc, "pad", pad)
	doc, _ = bsoncore.AppendDocumentEnd(doc, i)
	return doc, idAt
}

func insertCommand(e *Env) []byte { return writeCommand(e, "insert") }

func updateCommand(e *Env) []byte { return writeCommand(e, "update") }

// writeCommand is the body of a write command named name on e's
// collection, ordered, with {w: 1, j: true}; its statements go in a
// document sequence.
func writeCommand(e *Env, name string) []byte {
	return command(e.DB.Name(), func(d []byte) []byte {
		d = bsoncore.AppendStringElement(d, name, e.Coll.Name())
		d = bsoncore.AppendBooleanElement(d, "ordered", true)
		wc, d := bsoncore.AppendDocumentElementStart(d, "writeConcern")
		d = bsoncore.AppendInt32Element(d, "w", 1)
		d = bsoncore.AppendBooleanElement(d, "j", true)
		d, _ = bsoncore.AppendDocumentEnd(d, wc)
		return d
	})
}

// rawFindOne reads one of idDocs documents of 100 B by its int64 _id, as
// FindOne/IntId does through the driver: a find with limit 1 and
// singleBatch, which is what a driver's findOne sends.
func rawFindOne(ctx context.Context, e *Env) (*Workload, error) {
	pad := padFor(size100B.bytes)
	if err := seed(ctx, e.Coll, idDocs, func(i int) any { return sized(int64(i), pad) }); err != nil {
		return nil, err
	}
	var idAt int
	body := command(e.DB.Name(), func(d []byte) []byte {
		d = bsoncore.AppendStringElement(d, "find", e.Coll.Name())
		f, d := bsoncore.AppendDocumentElementStart(d, "filter")
		d, idAt = appendPatchable(d, "_id")
		d, _ = bsoncore.AppendDocumentEnd(d, f)
		d = bsoncore.AppendInt32Element(d, "limit", 1)
		return bsoncore.AppendBooleanElement(d, "singleBatch", true)
	})
	msg, _ := frame(body, "", nil)
	cs, err := openRawClients(ctx, e, 1, msg, []int{bodyAt + idAt})
	if err != nil {
		return nil, err
	}
	return &Workload{Close: cs.close, Call: func(_ context.Context, n int64) error {
		return cs.do(func(c *rawClient) error {
			id := int64(spread(n, idDocs))
			setInt64(c.msg, c.ids[0], id)
			body, err := c.conn.command(c.msg)
			if err != nil {
				return err
			}
			got, err := firstBatchLen(body)
			if err == nil && got != 1 {
				err = fmt.Errorf("find _id %d returned %d documents, want 1", id, got)
			}
			return err
		})
	}}, nil
}

// rawClient is one client of a raw benchmark: its connection and its own
// copy of the pre-framed request, which each call patches at ids.
type rawClient struct {
	conn *rawConn
	msg  []byte
	ids  []int
}

// rawClients hands each concurrent call a client of its own, so that no
// two calls share a connection or a request buffer.
type rawClients struct {
	free chan *rawClient
	all  []*rawClient
	stop func() bool // cancels the close on the run's end
}

// openRawClients connects n clients to e's target, each with a copy of
// msg. The run's context ending closes them, which ends any read that
// waits on a server that stopped answering.
func openRawClients(ctx context.Context, e *Env, n int, msg []byte, ids []int) (*rawClients, error) {
	addr, err := rawAddr(e.URL)
	if err != nil {
		return nil, errNotApplicable{err.Error()}
	}
	return dialRawClients(ctx, addr, n, msg, ids)
}

// dialRawClients connects n clients to addr, as openRawClients does.
func dialRawClients(ctx context.Context, addr string, n int, msg []byte, ids []int) (*rawClients, error) {
	cs := &rawClients{free: make(chan *rawClient, n)}
	for range n {
		conn, err := dialRaw(ctx, addr)
		if err != nil {
			cs.closeConns()
			return nil, fmt.Errorf("raw connection to %s: %w", addr, err)
		}
		c := &rawClient{conn: conn, msg: slices.Clone(msg), ids: ids}
		cs.all = append(cs.all, c)
		cs.free <- c
	}
	cs.stop = context.AfterFunc(ctx, cs.closeConns)
	return cs, nil
}

func (cs *rawClients) do(f func(*rawClient) error) error {
	c := <-cs.free
	defer func() { cs.free <- c }()
	return f(c)
}

func (cs *rawClients) close() {
	cs.stop()
	cs.closeConns()
}

func (cs *rawClients) closeConns() {
	for _, c := range cs.all {
		c.conn.close()
	}
}
