package server

import (
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
	"github.com/dumbodb/dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Handshake figures, as mongod 8.0 reports them.
const (
	maxWireVersion               = 25
	maxWriteBatchSize            = 100000
	logicalSessionTimeoutMinutes = 30
	maxBsonObjectSize            = wire.MaxDocumentSize
	maxMessageSizeBytes          = wire.MaxMessageSize
)

// cmdHello answers hello, isMaster and ismaster. The legacy spellings report
// "ismaster", hello reports "isWritablePrimary".
func cmdHello(r *request) (bsoncore.Document, error) {
	// Drivers add handshake fields as new server versions learn them
	// (backpressure, ...); like a newer mongod, take what we know and ignore
	// the rest.
	if err := r.c.noteHello(r.cmd); err != nil {
		return nil, err
	}
	if err := r.awaitHello(); err != nil {
		return nil, err
	}
	helloOk, _ := asBool(r.cmd.Lookup("helloOk"))
	compression, _ := r.cmd.Lookup("compression").ArrayOK()
	if compression != nil {
		r.c.negotiateCompression(compression)
	}
	if cl, ok := r.cmd.Lookup("client").DocumentOK(); ok {
		r.c.setClientMetadata(cl)
	}
	b := bsoncore.NewDocumentBuilder()
	writable := !r.c.s.cfg.replica()
	if r.name == "hello" {
		b.AppendBoolean("isWritablePrimary", writable)
	} else {
		b.AppendBoolean("ismaster", writable)
	}
	if helloOk {
		b.AppendBoolean("helloOk", true)
	}
	b.AppendInt32("maxBsonObjectSize", maxBsonObjectSize).
		AppendInt32("maxMessageSizeBytes", maxMessageSizeBytes).
		AppendInt32("maxWriteBatchSize", maxWriteBatchSize).
		AppendDateTime("localTime", time.Now().UnixMilli()).
		AppendInt32("logicalSessionTimeoutMinutes", logicalSessionTimeoutMinutes).
		AppendValue("connectionId", value.Count(r.c.id)).
		AppendInt32("minWireVersion", 0).
		AppendInt32("maxWireVersion", maxWireVersion).
		AppendBoolean("readOnly", false)
	r.c.s.appendHelloFields(b)
	if err := r.helloAuthFields(b); err != nil {
		return nil, err
	}
	if len(r.c.compressors) > 0 {
		ab := bsoncore.NewArrayBuilder()
		for _, c := range r.c.compressors {
			ab.AppendString(c)
		}
		b.AppendArray("compression", ab.Build())
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// negotiateCompression keeps the compressors the client offers that we
// support, in the client's order.
func (c *conn) negotiateCompression(offer bsoncore.Array) {
	vals, _ := offer.Values()
	c.compressors = c.compressors[:0]
	for _, v := range vals {
		name, ok := v.StringValueOK()
		if !ok {
			continue
		}
		if _, ok := wire.CompressorByName(name); ok {
			c.compressors = append(c.compressors, name)
		}
	}
}

// appName is the application name the client sent in its handshake.
func (c *conn) appName() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	name, _ := c.clientMD.Lookup("application", "name").StringValueOK()
	return name
}

// appName is the client's application name: the connection's, or on its
// handshake, before the connection has any, the one this hello carries,
// so that a fail point for an application also fails its handshakes.
func (r *request) appName() string {
	if name := r.c.appName(); name != "" {
		return name
	}
	name, _ := r.cmd.Lookup("client", "application", "name").StringValueOK()
	return name
}

// noteHello records a hello on the connection. Its first hello is where
// a client sends its metadata (the handshake); mongod fixes the metadata
// there and refuses it in any later hello, whether the first carried any.
func (c *conn) noteHello(cmd bsoncore.Document) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.helloSeen
	c.helloSeen = true
	if _, err := cmd.LookupErr("client"); err == nil && seen {
		return mongoerr.New(mongoerr.ClientMetadataCannotBeMutated, "The client metadata document may only be sent in the first hello")
	}
	return nil
}

func (c *conn) setClientMetadata(md bsoncore.Document) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clientMD == nil {
		c.clientMD = append(bsoncore.Document(nil), md...)
		c.log.Info().Str("c", "NETWORK").Str("client", md.String()).Msg("client metadata")
	}
}
