package server

import (
	"net"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// DefaultReplSet is the name of the one-member replica set DumboDB
// presents unless told otherwise (docs/design/transactions.md).
const DefaultReplSet = "rs0"

// Replica-set figures of a one-member set, as mongod reports them.
const (
	replTerm          = 1
	replConfigVersion = 1
	heartbeatMillis   = 2000
)

// electionID is term 1's election id as mongod writes it.
var electionID = bson.ObjectID{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1}

// topology is what hello says about the deployment.
type topology struct {
	setName   string // "": a standalone
	me        string // the advertised host:port
	processID bson.ObjectID
	replSetID bson.ObjectID
	elected   clusterTime
}

func (t *topology) replicaSet() bool { return t.setName != "" }

// isMe reports whether a member's host names this server: the advertised
// host, or a loopback spelling of its port.
func (t *topology) isMe(host string) bool {
	if host == t.me {
		return true
	}
	h, port, err := net.SplitHostPort(host)
	_, myPort, _ := net.SplitHostPort(t.me)
	ip := net.ParseIP(h)
	return err == nil && port == myPort && (h == "localhost" || (ip != nil && ip.IsLoopback()))
}

// newTopology describes this process once its listeners are open: the
// advertised host is cfg.AdvertiseHost, else the first TCP listener's
// address, a wildcard address being advertised as localhost.
func newTopology(cfg Config, addrs []net.Addr, clock *clusterClock) *topology {
	t := &topology{processID: bson.NewObjectID(), replSetID: bson.NewObjectID(), elected: clock.now()}
	if !cfg.Standalone {
		t.setName = cfg.ReplSet
		if t.setName == "" {
			t.setName = DefaultReplSet
		}
	}
	t.me = cfg.AdvertiseHost
	for _, a := range addrs {
		tcp, ok := a.(*net.TCPAddr)
		if !ok || t.me != "" {
			continue
		}
		host := tcp.IP.String()
		if tcp.IP.IsUnspecified() {
			host = "localhost"
		}
		t.me = net.JoinHostPort(host, strconv.Itoa(tcp.Port))
	}
	if t.me == "" {
		t.me = net.JoinHostPort("localhost", strconv.Itoa(cfg.Port))
	}
	return t
}

// topologyVersion is this server's: its process and a counter that stays
// 0, its one member never changing state.
func (s *Server) topologyVersion() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendObjectID("processId", s.topo.processID).AppendInt64("counter", 0).Build()
}

// appendHelloFields adds the replica-set fields of hello: the set, this
// member as its primary, the last write and the topology version.
func (s *Server) appendHelloFields(b *bsoncore.DocumentBuilder) {
	t := s.topo
	b.AppendDocument("topologyVersion", s.topologyVersion())
	if !t.replicaSet() {
		return
	}
	last, wall := s.clock.lastWritten()
	if last.isZero() {
		last, wall = t.elected, s.started
	}
	b.AppendArray("hosts", bsoncore.NewArrayBuilder().AppendString(t.me).Build()).
		AppendString("setName", t.setName).
		AppendInt32("setVersion", replConfigVersion)
	if s.cfg.replica() { // a read replica: a secondary whose primary it does not know
		b.AppendBoolean("secondary", true)
	} else {
		b.AppendBoolean("secondary", false).
			AppendString("primary", t.me).
			AppendObjectID("electionId", electionID)
	}
	b.AppendString("me", t.me).
		AppendDocument("lastWrite", bsoncore.NewDocumentBuilder().
			AppendDocument("opTime", opTimeDoc(last)).
			AppendDateTime("lastWriteDate", wall.UnixMilli()).
			AppendDocument("majorityOpTime", opTimeDoc(last)).
			AppendDateTime("majorityWriteDate", wall.UnixMilli()).Build())
}

func opTimeDoc(t clusterTime) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendTimestamp("ts", t.t, t.i).AppendInt64("t", replTerm).Build()
}

// awaitHello makes an awaitable hello wait: a client that sent our
// topologyVersion and maxAwaitTimeMS hears back only when the topology
// changes (never, while this process lives) or the time is up.
func (r *request) awaitHello() error {
	tv, ok := r.cmd.Lookup("topologyVersion").DocumentOK()
	if !ok {
		if _, err := r.cmd.LookupErr("maxAwaitTimeMS"); err == nil {
			return mongoerr.New(mongoerr.Location31368, "A request to the hello command with maxAwaitTimeMS must also include topologyVersion")
		}
		return nil
	}
	wait, ok := value.AsInt64(r.cmd.Lookup("maxAwaitTimeMS"))
	if !ok {
		return mongoerr.New(mongoerr.Location31368, "A request to the hello command with topologyVersion must also include maxAwaitTimeMS")
	}
	if wait < 0 {
		return mongoerr.New(mongoerr.BadValue, "maxAwaitTimeMS must be a non-negative integer")
	}
	pid, _ := tv.Lookup("processId").ObjectIDOK()
	counter, _ := value.AsInt64(tv.Lookup("counter"))
	if pid != r.c.s.topo.processID || counter != 0 {
		return nil // an older topology: answer at once
	}
	r.awaited = true
	timer := time.NewTimer(time.Duration(wait) * time.Millisecond)
	defer timer.Stop()
	// A waiting hello is not work: drivers keep one waiting all the time,
	// and busy polling (which gives way while commands run) must go on.
	r.c.s.running.Add(-1)
	defer r.c.s.running.Add(1)
	select {
	case <-timer.C:
	case <-r.ctx.Done():
		return r.ctx.Err()
	case <-r.c.s.done:
		return mongoerr.New(mongoerr.ShutdownInProgress, "The server is in quiesce mode and will shut down")
	}
	return nil
}

// noReplication is mongod's answer to replSet* commands on a standalone.
func (r *request) noReplication() error {
	if r.c.s.topo.replicaSet() {
		return nil
	}
	return mongoerr.New(mongoerr.NoReplicationEnabled, "not running with --replSet")
}

// cmdReplSetGetStatus describes the one member as mongod does.
func cmdReplSetGetStatus(r *request) (bsoncore.Document, error) {
	if err := r.noReplication(); err != nil {
		return nil, err
	}
	s := r.c.s
	last, wall := s.clock.lastWritten()
	if last.isZero() {
		last, wall = s.topo.elected, s.started
	}
	op := opTimeDoc(last)
	optimes := bsoncore.NewDocumentBuilder().
		AppendDocument("lastCommittedOpTime", op).AppendDateTime("lastCommittedWallTime", wall.UnixMilli()).
		AppendDocument("readConcernMajorityOpTime", op).
		AppendDocument("appliedOpTime", op).AppendDocument("durableOpTime", op).
		AppendDateTime("lastAppliedWallTime", wall.UnixMilli()).
		AppendDateTime("lastDurableWallTime", wall.UnixMilli()).Build()
	state, stateStr := int32(1), "PRIMARY"
	if s.cfg.replica() {
		state, stateStr = 2, "SECONDARY" // a read replica (replica.go)
	}
	member := bsoncore.NewDocumentBuilder().
		AppendInt32("_id", 0).AppendString("name", s.topo.me).AppendDouble("health", 1).
		AppendInt32("state", state).AppendString("stateStr", stateStr).
		AppendInt64("uptime", int64(time.Since(s.started).Seconds())).
		AppendDocument("optime", op).AppendDateTime("optimeDate", wall.UnixMilli()).
		AppendDateTime("lastAppliedWallTime", wall.UnixMilli()).
		AppendDateTime("lastDurableWallTime", wall.UnixMilli()).
		AppendString("syncSourceHost", "").AppendInt32("syncSourceId", -1).AppendString("infoMessage", "").
		AppendTimestamp("electionTime", s.topo.elected.t, s.topo.elected.i).
		AppendDateTime("electionDate", s.started.UnixMilli()).
		AppendInt32("configVersion", replConfigVersion).AppendInt32("configTerm", replTerm).
		AppendBoolean("self", true).AppendString("lastHeartbeatMessage", "").Build()
	return bsoncore.NewDocumentBuilder().
		AppendString("set", s.topo.setName).AppendDateTime("date", time.Now().UnixMilli()).
		AppendInt32("myState", state).AppendInt64("term", replTerm).
		AppendString("syncSourceHost", "").AppendInt32("syncSourceId", -1).
		AppendInt64("heartbeatIntervalMillis", heartbeatMillis).
		AppendInt32("majorityVoteCount", 1).AppendInt32("writeMajorityCount", 1).
		AppendInt32("votingMembersCount", 1).AppendInt32("writableVotingMembersCount", 1).
		AppendDocument("optimes", optimes).
		AppendArray("members", bsoncore.NewArrayBuilder().AppendDocument(member).Build()).
		AppendDouble("ok", 1).Build(), nil
}

// replSetConfig is the set's configuration document.
func (s *Server) replSetConfig() bsoncore.Document {
	member := bsoncore.NewDocumentBuilder().
		AppendInt32("_id", 0).AppendString("host", s.topo.me).AppendBoolean("arbiterOnly", false).
		AppendBoolean("buildIndexes", true).AppendBoolean("hidden", false).AppendDouble("priority", 1).
		AppendDocument("tags", bsoncore.NewDocumentBuilder().Build()).
		AppendInt64("secondaryDelaySecs", 0).AppendInt32("votes", 1).Build()
	settings := bsoncore.NewDocumentBuilder().
		AppendBoolean("chainingAllowed", true).AppendInt32("heartbeatIntervalMillis", heartbeatMillis).
		AppendInt32("heartbeatTimeoutSecs", 10).AppendInt32("electionTimeoutMillis", 10000).
		AppendInt32("catchUpTimeoutMillis", -1).AppendInt32("catchUpTakeoverDelayMillis", 30000).
		AppendDocument("getLastErrorModes", bsoncore.NewDocumentBuilder().Build()).
		AppendDocument("getLastErrorDefaults", bsoncore.NewDocumentBuilder().AppendInt32("w", 1).AppendInt32("wtimeout", 0).Build()).
		AppendObjectID("replicaSetId", s.topo.replSetID).Build()
	return bsoncore.NewDocumentBuilder().
		AppendString("_id", s.topo.setName).AppendInt32("version", replConfigVersion).AppendInt64("term", replTerm).
		AppendArray("members", bsoncore.NewArrayBuilder().AppendDocument(member).Build()).
		AppendInt32("protocolVersion", 1).AppendBoolean("writeConcernMajorityJournalDefault", true).
		AppendDocument("settings", settings).Build()
}

func cmdReplSetGetConfig(r *request) (bsoncore.Document, error) {
	if err := r.noReplication(); err != nil {
		return nil, err
	}
	var commitment bool
	err := r.parseArgs(map[string]fieldHandler{
		"commitmentStatus": r.boolArg("commitmentStatus", &commitment),
		// Members being added are shown as mongod shows them: there are none.
		"$_internalIncludeNewlyAdded": r.ignoredArg("$_internalIncludeNewlyAdded", "bool"),
	})
	if err != nil {
		return nil, err
	}
	b := bsoncore.NewDocumentBuilder().AppendDocument("config", r.c.s.replSetConfig())
	if commitment {
		b.AppendBoolean("commitmentStatus", true) // one member: always committed
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// cmdReplSetInitiate accepts what would make this set: no config, or a
// config of this set's name with one member. The set is initiated already,
// so scripts that run rs.initiate() on a fresh server go on.
func cmdReplSetInitiate(r *request) (bsoncore.Document, error) {
	if err := r.noReplication(); err != nil {
		return nil, err
	}
	v, err := r.cmd.Index(0).ValueErr()
	if err != nil {
		return nil, err
	}
	cfg, ok := v.DocumentOK()
	if !ok || len(cfg) <= 5 {
		return okReply(), nil // 1, null or {}: the default config, which is ours
	}
	name, _ := cfg.Lookup("_id").StringValueOK()
	if name != r.c.s.topo.setName {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "Attempting to initiate a replica set with name %s, but command line reports %s; rejecting", name, r.c.s.topo.setName)
	}
	members, _ := cfg.Lookup("members").ArrayOK()
	vals, _ := members.Values()
	if len(vals) != 1 {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig, "DumboDB runs a replica set of exactly one member; the config names %d", len(vals))
	}
	host, _ := vals[0].Document().Lookup("host").StringValueOK()
	if !r.c.s.topo.isMe(host) {
		return nil, mongoerr.New(mongoerr.InvalidReplicaSetConfig,
			"No host described in new configuration for replica set %s maps to this node", name)
	}
	return okReply(), nil
}
