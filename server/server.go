package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/js"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/wire"

	"github.com/rs/zerolog"
)

// Version is DumboDB's own version, reported beside the MongoDB version we
// speak in buildInfo and serverStatus.
const Version = "0.1.0"

// mongoVersion is the MongoDB server version whose behaviour we follow.
const mongoVersion = "8.0.4"

// Config is what the server needs from the command line.
type Config struct {
	BindIPs    []string // TCP addresses to listen on
	Port       int
	UnixSocket string   // optional path of a Unix socket
	Argv       []string // for getCmdLineOpts
	// TestCommands enables test-only commands (configureFailPoint), as
	// mongod's enableTestCommands parameter does.
	TestCommands bool
	// AuthMechanisms are the mechanisms clients may authenticate with
	// (nil: DefaultAuthMechanisms; SetAuthMechanisms).
	AuthMechanisms []string
	// AutoCommit makes every write also a commit, in the databases whose
	// own switch (dumboConfig) does not say otherwise (autocommit.go).
	AutoCommit bool
	// TTLInterval is how long the TTL monitor sleeps between passes at
	// start (default 60 s; setParameter ttlMonitorSleepSecs changes it).
	TTLInterval time.Duration
	// BusyPoll is how long an idle connection may spin for its next
	// request while nothing else runs (0: never; see busyPoller).
	BusyPoll time.Duration
	// InFlightBytes bounds the memory of messages being received and
	// handled, across connections (0: DefaultInFlightBytes); a connection
	// whose message would pass it is closed.
	InFlightBytes int64
	// MessageStall is how long the rest of a message may take once its
	// first byte arrived (0: DefaultMessageStall).
	MessageStall time.Duration
	// ReplSet names the one-member replica set the server presents
	// ("": DefaultReplSet); Standalone presents a plain standalone instead.
	ReplSet    string
	Standalone bool
	// AdvertiseHost is the host:port hello names as this member ("": the
	// first TCP listener's address; see newTopology).
	AdvertiseHost string
	// TLS is the TCP listeners' TLS (tls.go).
	TLS TLSConfig
	// Auth requires every command but the handshake and authentication to
	// come from an authenticated user with the privileges it needs
	// (mongod's --auth; docs/design/auth.md).
	Auth bool
	// ReplicaOf makes the server a read replica of the databases stored
	// under this file:// or s3:// root, polled every ReplicaPoll (0:
	// DefaultReplicaPoll); docs/design/replicas.md.
	ReplicaOf   string
	ReplicaPoll time.Duration
	// MaxConns bounds the client connections open at once (0:
	// DefaultMaxConns, mongod's); one past it is closed as it arrives, as
	// mongod's --maxConns does.
	MaxConns int
	// SlowOp is the time past which a command is logged as a slow query
	// (0: DefaultSlowOp, mongod's --slowms default); SlowOpSkipRate the
	// share of slow commands left out of the log, picked at random (1 less
	// mongod's slowOpSampleRate; 0: none left out).
	SlowOp         time.Duration
	SlowOpSkipRate float64
	// Quiet leaves connections' opening and closing out of the log, as
	// mongod's --quiet does (setParameter quiet changes it).
	Quiet bool
	// LogLevel is the log's verbosity, 0 to 5. SetLogLevel changes it
	// and each component's (by the code a line carries in "c", after
	// inheritance), as setParameter logLevel and logComponentVerbosity
	// do (nil: the levels are the host program's).
	LogLevel    int
	SetLogLevel func(global int, components map[string]int)
	// RotateLog rotates the log file (the logRotate command; nil: the log
	// is no file of the server's, and there is nothing to rotate).
	RotateLog func() error
	// HTTPAddress is the HOST:PORT of the HTTP listener ("": none), which
	// serves the databases as remotes, metrics and health checks
	// (http.go); HTTPDebug adds Go's profiler under /debug/pprof/.
	HTTPAddress string
	HTTPDebug   bool
	// EarlyHTTP, when set, is HTTPAddress's listener, opened before the
	// storage engine recovered (http_early.go): the server takes it over.
	EarlyHTTP *EarlyHTTP
	// NoScripting turns server-side JavaScript off ($where, $function,
	// $accumulator, mapReduce), as mongod's --noscripting does.
	NoScripting bool
	// JSTimeout bounds one JavaScript call (0: js.DefaultTimeout, mongod's
	// internalQueryJavaScriptFnTimeoutMillis); JSHeapLimit the heap one
	// call may grow by (0: js.DefaultHeapLimit). docs/design/javascript.md.
	JSTimeout   time.Duration
	JSHeapLimit int64
	// MemoryRelease is how often the server returns the Go heap's free
	// pages to the kernel once there are enough of them (0: never, the
	// runtime's own pace; memory_release.go).
	MemoryRelease time.Duration
}

// DefaultMaxConns and DefaultSlowOp are mongod's defaults of --maxConns
// and --slowms.
const (
	DefaultMaxConns = 1000000
	DefaultSlowOp   = 100 * time.Millisecond
)

// Defaults of the message limits.
const (
	DefaultInFlightBytes = 256 << 20
	DefaultMessageStall  = 30 * time.Second
)

func (c Config) messageStall() time.Duration { return cmp.Or(c.MessageStall, DefaultMessageStall) }

func (c Config) maxConns() int64 { return int64(cmp.Or(c.MaxConns, DefaultMaxConns)) }

func (c Config) slowOp() time.Duration { return cmp.Or(c.SlowOp, DefaultSlowOp) }

// slowSkip is the share of slow operations not logged nor profiled.
func (s *Server) slowSkip() float64 { return math.Float64frombits(s.slowSkipBits.Load()) }

func (s *Server) setSlowSkip(f float64) { s.slowSkipBits.Store(math.Float64bits(f)) }

// sampledSlow reports whether a slow command is logged (and profiled at
// level 1): all of them, or all but a share slowSkip of them picked at
// random.
func (s *Server) sampledSlow() bool {
	skip := s.slowSkip()
	return skip <= 0 || rand.Float64() >= skip
}

// Server is a running DumboDB: its listeners, connections, cursors and
// counters over one storage engine.
type Server struct {
	cfg    Config
	top    topTable   // the top command's figures (cmd_top.go)
	js     *js.Engine // runs the commands' JavaScript (js)
	engine *storage.Engine
	users  *auth.Store // users and roles (docs/format/auth.md), loaded by Listen
	// tlsConfig is the TCP listeners' TLS (nil: disabled), made by Listen.
	tlsConfig *tls.Config
	// authThrottle slows down repeated failed logins per source.
	authThrottle authThrottle
	log          zerolog.Logger
	logRing      *LogRing
	started      time.Time

	listeners []net.Listener
	http      *httpListener // nil: no HTTP listener (http.go)
	// httpMounts: handlers of other packages on the HTTP listener
	// (HandleHTTP), such as the web console.
	httpMounts  []httpMount
	inFlight    *wire.Budget
	cursors     *cursorRegistry
	stats       stats
	failCommand failCommand
	// retryFailPoint is onPrimaryTransactionalWrite (failpoint.go).
	retryFailPoint retryFailPoint
	// getMoreFailPoint is failGetMoreAfterCursorCheckout (failpoint.go).
	getMoreFailPoint getMoreFailPoint
	// maxTimeFailPoint is maxTimeAlwaysTimeOut (failpoint.go).
	maxTimeFailPoint maxTimeFailPoint
	topo             *topology // set by Listen
	clock            *clusterClock
	sessions         *sessionTable
	memReleases      memoryReleases
	replica          replicaStatus  // a read replica's polls (replica.go)
	metrics          *serverMetrics // Prometheus metrics (metrics.go)
	shutdownSig      shutdownSignal // the shutdown command's (cmd_shutdown.go)

	nextConnID atomic.Int64
	nextOpID   atomic.Int64
	connsMu    sync.Mutex
	conns      map[*conn]struct{}
	wg         sync.WaitGroup
	closing    atomic.Bool
	done       chan struct{} // closed by Shutdown

	txnLifetime atomic.Int64 // transactionLifetimeLimitSeconds, as a time.Duration
	ttl         ttlMonitor   // the TTL monitor's parameters (ttl.go)
	// cursorTimeout (cursorTimeoutMillis, as a time.Duration), quiet and
	// logLevel are the parameters of those names (setParameter).
	cursorTimeout atomic.Int64
	quiet         atomic.Bool
	logLevel      atomic.Int32
	logVerbosity  logVerbosity // components' own (log_verbosity.go)
	// slowOp is --slowms as a time.Duration and slowSkipBits the share of
	// slow operations not logged (float64 bits): profile changes both.
	slowOp       atomic.Int64
	rwDefaults   atomic.Pointer[rwDefaults] // set by setDefaultRWConcern (rwconcern_defaults.go)
	slowSkipBits atomic.Uint64
	profiler     profiler    // the database profiler (profiler.go)
	autoCommit   autoCommits // commit groups of automatic commits (autocommit.go)

	running  atomic.Int64 // messages being handled, on all connections
	spinning atomic.Bool  // a connection is busy-polling
}

// stats are the counters serverStatus reports.
type stats struct {
	connsCurrent, connsTotal                                    atomic.Int64
	opInsert, opQuery, opUpdate, opDelete, opGetMore, opCommand atomic.Int64
	bytesIn, bytesOut, numRequests                              atomic.Int64 // the wire protocol's, as they crossed the socket
	connsAdmitted                                               atomic.Int64 // accepted, not yet in connsCurrent (MaxConns)
}

// New creates a server; Listen and Serve start it.
func New(cfg Config, engine *storage.Engine, log zerolog.Logger, ring *LogRing) *Server {
	s := &Server{
		cfg: cfg, engine: engine, log: log, logRing: ring, started: time.Now(),
		cursors: newCursorRegistry(), conns: map[*conn]struct{}{}, done: make(chan struct{}),
		inFlight: wire.NewBudget(cmp.Or(cfg.InFlightBytes, DefaultInFlightBytes)),
		clock:    newClusterClock(), sessions: newSessionTable(),
		js: js.New(js.Config{Disabled: cfg.NoScripting, Timeout: cfg.JSTimeout, HeapLimit: cfg.JSHeapLimit}),
	}
	s.topo = newTopology(cfg, nil, s.clock)
	s.txnLifetime.Store(int64(DefaultTransactionLifetime))
	s.ttl.init(cfg.TTLInterval)
	s.cursorTimeout.Store(int64(cursorIdleTimeout))
	s.slowOp.Store(int64(cfg.slowOp()))
	s.setSlowSkip(cfg.SlowOpSkipRate)
	s.quiet.Store(cfg.Quiet)
	s.logLevel.Store(int32(cfg.LogLevel))
	s.metrics = newServerMetrics(s)
	s.shutdownSig.ch = make(chan ShutdownRequest, 1)
	if engine != nil {
		engine.SetObserver(s.metrics)
		// Published states are stamped in cluster time, for reads at a
		// time (atClusterTime) and transactions over several databases.
		engine.SetClock(func() uint64 { return s.clock.tickWrite().stamp() })
		s.loadRWDefaults()
	}
	return s
}

// Listen opens every configured listener.
func (s *Server) Listen() error {
	users, err := auth.Open(s.engine.Dir())
	if err != nil {
		return fmt.Errorf("users: %w", err)
	}
	users.SetWriteHold(func() func() {
		leave, _ := s.engine.EnterWriteGate(context.Background()) // never fails without a deadline
		return leave
	})
	s.users = users
	if s.tlsConfig, err = s.cfg.TLS.build(); err != nil {
		return err
	}
	for _, ip := range s.cfg.BindIPs {
		l, err := net.Listen("tcp", net.JoinHostPort(ip, fmt.Sprint(s.cfg.Port)))
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("listen on %s:%d: %w", ip, s.cfg.Port, err)
		}
		s.listeners = append(s.listeners, l)
	}
	if s.cfg.UnixSocket != "" {
		os.Remove(s.cfg.UnixSocket) // a stale socket from a crashed run
		l, err := net.Listen("unix", s.cfg.UnixSocket)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("listen on %s: %w", s.cfg.UnixSocket, err)
		}
		s.listeners = append(s.listeners, l)
	}
	if err := s.listenHTTP(); err != nil {
		s.closeListeners()
		return err
	}
	s.topo = newTopology(s.cfg, s.Addrs(), s.clock)
	return nil
}

// Addrs are the addresses the server listens on (useful with port 0).
func (s *Server) Addrs() []net.Addr {
	out := make([]net.Addr, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.Addr()
	}
	return out
}

// Serve accepts connections until Shutdown.
func (s *Server) Serve() {
	for _, l := range s.listeners {
		s.log.Info().Str("c", "NETWORK").Str("address", l.Addr().String()).Msg("Waiting for connections")
		s.wg.Add(1)
		go s.acceptLoop(l)
	}
	s.serveHTTP()
	s.wg.Add(4)
	go s.reapTransactionsLoop()
	go s.reapCursors()
	go s.ttlLoop()
	go s.watchSlowOps()
	if s.cfg.MemoryRelease > 0 {
		s.wg.Add(1)
		go s.releaseMemoryLoop()
	}
	if s.cfg.replica() {
		s.wg.Add(1)
		go s.replicaLoop()
	}
}

// Pipe opens an in-process connection: the caller holds one end of an
// in-memory pipe and the server serves the other, as it serves a
// listener's connections (the embedded package's driver and the web
// console talk to the server this way, with no port).
func (s *Server) Pipe() net.Conn {
	client, srv := net.Pipe()
	s.ServeConn(srv)
	return client
}

// ServeConn serves one connection that came through no listener (an
// in-process client's, as Pipe makes them) until it closes or the
// server shuts down.
func (s *Server) ServeConn(nc net.Conn) {
	if s.closing.Load() {
		nc.Close()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.newConn(nc).serve()
	}()
}

func (s *Server) acceptLoop(l net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn().Str("c", "NETWORK").Err(err).Msg("accept failed")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !s.admit(nc) {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if _, unix := nc.(*net.UnixConn); !unix {
				secured, err := s.secure(nc)
				if err != nil {
					s.stats.connsAdmitted.Add(-1)
					s.log.Info().Str("c", "NETWORK").Str("remote", nc.RemoteAddr().String()).Err(err).Msg("connection refused")
					nc.Close()
					return
				}
				nc = secured
			}
			c := s.newConn(nc) // counted in connsCurrent from here
			s.stats.connsAdmitted.Add(-1)
			c.serve()
		}()
	}
}

// admit counts an accepted connection against MaxConns, closing it when
// the server has as many open (and admitted, not yet served) already.
func (s *Server) admit(nc net.Conn) bool {
	if s.stats.connsCurrent.Load()+s.stats.connsAdmitted.Add(1) > s.cfg.maxConns() {
		s.stats.connsAdmitted.Add(-1)
		s.log.Info().Str("c", "NETWORK").Str("remote", nc.RemoteAddr().String()).Int64("maxConns", s.cfg.maxConns()).
			Msg("connection refused because too many open connections")
		nc.Close()
		return false
	}
	return true
}

// Shutdown stops accepting, closes connections, waits for them to finish
// their current command, and returns. The caller closes the engine after.
func (s *Server) Shutdown(ctx context.Context) {
	if s.closing.Swap(true) {
		return
	}
	close(s.done)
	s.closeListeners()
	s.shutdownHTTP(ctx)
	s.connsMu.Lock()
	for c := range s.conns {
		c.closeRead()
	}
	s.connsMu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn().Str("c", "CONTROL").Msg("shutdown timed out waiting for connections")
	}
	// Open transactions end with the server (their writes are dropped).
	s.sessions.end(s.matchingSessions(func(storage.SessionKey) bool { return true }))
	if s.cfg.UnixSocket != "" {
		os.Remove(s.cfg.UnixSocket)
	}
}

func (s *Server) closeListeners() {
	for _, l := range s.listeners {
		l.Close()
	}
}

// guard runs one pass of a background loop, logging a panic instead of
// letting it end the process.
func (s *Server) guard(what string, fn func()) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error().Str("c", "CONTROL").Interface("panic", p).Str("stack", string(debug.Stack())).
				Msg(what + " panicked")
		}
	}()
	fn()
}

// reapTransactionsLoop aborts expired transactions every second.
func (s *Server) reapTransactionsLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.guard("transaction reaping", func() { s.reapTransactions(time.Duration(s.txnLifetime.Load())) })
		case <-s.done:
			return
		}
	}
}

func (s *Server) reapCursors() {
	defer s.wg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.guard("cursor reaping", func() { s.cursors.reapIdle(time.Duration(s.cursorTimeout.Load())) })
			s.guard("session reaping", s.reapSessions)
		case <-s.done:
			return
		}
	}
}

// setLogLevel changes the log's verbosity (setParameter logLevel).
func (s *Server) setLogLevel(n int) {
	s.logLevel.Store(int32(n))
	s.applyLogVerbosity()
}
