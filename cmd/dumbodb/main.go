// Command dumbodb is the DumboDB server: a MongoDB-compatible document
// database with Git-style version control, storing data in Dolt.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dumbodb/dumbodb/console"
	"github.com/dumbodb/dumbodb/server"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// serverFlags are the command-line flags, named as mongod names them.
type serverFlags struct {
	dataDir         string
	port            int
	bindIP          string
	bindIPAll       bool
	pidFile         string
	maxConns        int
	slowMS          int
	profile         int
	profileFilter   string
	fork            bool
	unixSocket      string
	version         bool
	cacheMB         int
	syncdelay       int
	testCmds        bool
	autoCommit      bool
	author          string
	largeDoc        int
	idleDBSeconds   int
	busyPollMicros  int
	releaseSeconds  int
	inFlightMB      int
	stallSeconds    int
	replSet         string
	standalone      bool
	auth            bool
	tls             server.TLSConfig
	advertiseHost   string
	changeSeconds   int
	changeMB        int
	autoGCMaxMB     int
	noScripting     bool
	replicaOf       string
	httpAddress     string
	httpDebug       bool
	undropHours     int
	replicaPoll     int
	cpuProfile      string
	heapProfile     string
	config          string
	logPath         string
	logAppend       bool
	logRotate       string
	quiet           bool
	verbosity       int
	sampleRate      float64
	setParams       []string
	componentLevels []string // name=level (systemLog.component.<name>.verbosity)
}

func parseFlags(args []string, stderr io.Writer) (*serverFlags, error) {
	o := &serverFlags{}
	fs := flag.NewFlagSet("dumbodb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dataDir, "data-dir", "data", "directory where DumboDB keeps its databases")
	fs.StringVar(&o.dataDir, "dbpath", "data", "alias of --data-dir")
	fs.IntVar(&o.port, "port", 27017, "TCP port to listen on")
	fs.StringVar(&o.bindIP, "bind_ip", "127.0.0.1", "comma-separated addresses to listen on")
	fs.BoolVar(&o.bindIPAll, "bind_ip_all", false, "listen on every IPv4 and IPv6 address, as mongod's --bind_ip_all; not with --bind_ip")
	fs.StringVar(&o.pidFile, "pidfilepath", "", "write the process id to this file once listening; removed at a clean shutdown")
	fs.IntVar(&o.maxConns, "maxConns", server.DefaultMaxConns, "most client connections open at once; one more is closed as it arrives")
	fs.IntVar(&o.slowMS, "slowms", int(server.DefaultSlowOp/time.Millisecond), "milliseconds past which a command is logged as a slow query")
	fs.IntVar(&o.profile, "profile", 0, "the profiling level every database starts with: 0 off, 1 slow operations, 2 all")
	fs.StringVar(&o.profileFilter, "profileFilter", "", "the profiler's filter every database starts with, as Extended JSON (operationProfiling.filter)")
	fs.BoolVar(&o.fork, "fork", false, "refused: run dumbodb under a service manager (systemd, a container) instead")
	fs.StringVar(&o.unixSocket, "unixSocket", "", "also listen on this Unix socket path")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.IntVar(&o.cacheMB, "cacheSizeMB", storage.DefaultCacheBytes>>20,
		"memory for acknowledged writes not yet checkpointed; reaching it forces a checkpoint")
	fs.IntVar(&o.syncdelay, "syncdelay", int(storage.DefaultCheckpointInterval/time.Second),
		"seconds between checkpoints of changed databases")
	fs.IntVar(&o.largeDoc, "largeDocThreshold", storage.DefaultLargeDocThreshold,
		"BSON size in bytes from which documents are stored path-indexed; 0 stores every document whole")
	fs.IntVar(&o.idleDBSeconds, "idleDatabaseSeconds", int(storage.DefaultIdleDatabaseTimeout/time.Second),
		"seconds an unused database stays open before it is checkpointed and closed (reopened on next use); 0 never closes one")
	fs.StringVar(&o.author, "author", storage.DefaultAuthor, `default commit author, "Name <email>"`)
	fs.IntVar(&o.busyPollMicros, "busyPollMicros", int(server.DefaultBusyPoll/time.Microsecond),
		"microseconds an idle connection spins for its next request while nothing else runs (lower latency on VMs); 0 never spins")
	fs.IntVar(&o.releaseSeconds, "memoryReleaseSeconds", int(server.DefaultMemoryRelease/time.Second),
		"seconds between checks that return the Go heap's free memory to the kernel (once past 1 MiB; costs one garbage collection); 0 leaves it to the Go runtime's pace")
	fs.IntVar(&o.inFlightMB, "maxInFlightMB", server.DefaultInFlightBytes>>20,
		"memory for messages being received and handled, all connections together (past 64 KiB each); a connection whose message would pass it is closed")
	fs.IntVar(&o.stallSeconds, "messageStallSeconds", int(server.DefaultMessageStall/time.Second),
		"seconds the rest of a message may take once it has begun; a connection that stalls inside a message is closed")
	fs.StringVar(&o.replSet, "replSet", server.DefaultReplSet,
		"name of the one-member replica set the server presents (sessions, retryable writes, transactions)")
	fs.BoolVar(&o.standalone, "standalone", false, "present a plain standalone instead of a one-member replica set")
	fs.BoolVar(&o.auth, "auth", false, "require authentication (SCRAM) and check each command against the user's roles")
	fs.StringVar(&o.tls.Mode, "tlsMode", server.TLSDisabled, "TLS on TCP: disabled, allowTLS, preferTLS (both accept TLS and plain) or requireTLS")
	fs.StringVar(&o.tls.CertificateKeyFile, "tlsCertificateKeyFile", "", "PEM file with the server's certificate and private key")
	fs.StringVar(&o.tls.CAFile, "tlsCAFile", "", "PEM file of the CAs whose client certificates are accepted (clients must present one)")
	fs.BoolVar(&o.tls.AllowConnectionsWithoutCertificates, "tlsAllowConnectionsWithoutCertificates", false, "with --tlsCAFile, also accept clients without a certificate")
	fs.StringVar(&o.advertiseHost, "advertiseHost", "",
		`host:port that hello names as this member, which clients connect to after discovering the set (default: the first --bind_ip and --port; "localhost" for 0.0.0.0)`)
	fs.IntVar(&o.changeSeconds, "changeStreamRetentionSeconds", int(storage.DefaultChangeRetention/time.Second),
		"seconds the change log keeps events for change streams to resume from (setParameter changes it while running)")
	fs.IntVar(&o.changeMB, "changeStreamRetentionMB", storage.DefaultChangeRetentionBytes>>20,
		"megabytes the change log keeps at most (setParameter changes it while running)")
	fs.IntVar(&o.autoGCMaxMB, "autoGCMaxMB", storage.DefaultAutoGCMaxBytes>>20,
		"largest database store (MB) collected automatically after a checkpoint once it has doubled since its last GC (the GC pauses its writers, 3-7 ms per MB); 0 turns automatic GC off")
	fs.BoolVar(&o.noScripting, "noscripting", false, "disable server-side JavaScript ($where, $function, $accumulator, mapReduce)")
	fs.IntVar(&o.undropHours, "undropRetentionHours", int(storage.DefaultUndropRetention/time.Hour),
		"hours dropDatabase keeps a database restorable by dumboUndrop; 0 removes it at once")
	fs.StringVar(&o.replicaOf, "replicaOf", "", "run as a read replica of the databases under this http(s)://host:port/ server, or stored under this file:// or s3:// root (docs/design/replicas.md)")
	fs.StringVar(&o.httpAddress, "httpAddress", "", "HOST:PORT of the HTTP listener: remotes, /metrics, /livez, /readyz (off by default; docs/design/http.md)")
	fs.BoolVar(&o.httpDebug, "httpDebug", false, "with --httpAddress, also serve Go's profiler under /debug/pprof/")
	fs.IntVar(&o.replicaPoll, "replicaPollSeconds", int(server.DefaultReplicaPoll/time.Second), "with --replicaOf, seconds between polls of the root")
	fs.StringVar(&o.heapProfile, "heapProfile", "", "write a Go heap profile to this file when a signal asks the server to stop, before it shuts down (for memory work; see docs/perf/README.md)")
	fs.StringVar(&o.cpuProfile, "cpuProfile", "", "write a Go CPU profile of the whole run to this file (for performance work; see docs/perf/README.md)")
	fs.BoolVar(&o.autoCommit, "autoCommit", false, "make every write also a commit of its branch, in the databases whose dumboConfig does not say otherwise (docs/design/auto-commit.md)")
	fs.BoolVar(&o.testCmds, "enableTestCommands", false, "enable test-only commands (configureFailPoint), for driver test suites")
	fs.StringVar(&o.config, "config", "", "a mongod-style YAML config file (docs/operations.md); the command line wins over it, it over DUMBODB_* variables")
	fs.StringVar(&o.config, "f", "", "alias of --config")
	fs.StringVar(&o.logPath, "logpath", "", "write the log to this file instead of standard output")
	fs.BoolVar(&o.logAppend, "logappend", false, "with --logpath, append to the file; otherwise a file there is first renamed to <path>.<time>")
	fs.StringVar(&o.logRotate, "logRotate", "rename", "how logRotate and SIGUSR1 rotate --logpath: rename (a new file) or reopen (after logrotate moved it)")
	fs.BoolVar(&o.quiet, "quiet", false, "leave connections opening and closing out of the log")
	fs.IntVar(&o.verbosity, "verbosity", 0, "log verbosity, 0 to 5 (1: debug lines; 2 and up: trace); -v to -vvvvv set it too")
	for i := 1; i <= 5; i++ {
		fs.Var(verbosityFlag{level: i, dst: &o.verbosity}, strings.Repeat("v", i), fmt.Sprintf("log verbosity %d", i))
	}
	fs.Float64Var(&o.sampleRate, "slowOpSampleRate", 1, "share of slow operations logged, 0 to 1")
	fs.Func("setParameter", "name=value: set at start a parameter setParameter takes, or authenticationMechanisms (repeatable)", func(v string) error {
		o.setParams = append(o.setParams, v)
		return nil
	})
	fs.Func("componentVerbosity", "component=level: a log component's verbosity, -1 to 5 (repeatable; systemLog.component.<component>.verbosity in the config file)", func(v string) error {
		o.componentLevels = append(o.componentLevels, v)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dumbodb [options]\n       dumbodb ping|inspect|import|bundle [options]   (each with --help)\n\n"+
			"A MongoDB-compatible document database with Git-style version control.\n\nOptions:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := loadSettings(fs, o, set); err != nil {
		fmt.Fprintln(stderr, "dumbodb:", err)
		return nil, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unknown subcommand or argument %q", fs.Arg(0))
		fmt.Fprintln(stderr, "dumbodb:", err)
		fs.Usage()
		return nil, err
	}
	if err := checkMongodFlags(o, set); err != nil {
		fmt.Fprintln(stderr, "dumbodb:", err)
		return nil, err
	}
	if o.replSet == "" && !o.standalone {
		err := errors.New("--replSet needs a name (use --standalone for no replica set)")
		fmt.Fprintln(stderr, "dumbodb:", err)
		return nil, err
	}
	if o.inFlightMB < 1 || o.stallSeconds < 1 || o.changeSeconds < 1 || o.changeMB < 1 {
		err := errors.New("--maxInFlightMB, --messageStallSeconds, --changeStreamRetentionSeconds and --changeStreamRetentionMB must be at least 1")
		fmt.Fprintln(stderr, "dumbodb:", err)
		return nil, err
	}
	return o, nil
}

// checkMongodFlags checks the flags taken with mongod's names and meaning
// and applies --bind_ip_all.
func checkMongodFlags(o *serverFlags, set map[string]bool) error {
	switch {
	case o.fork:
		return errors.New("--fork is not supported: run dumbodb in the foreground under a service manager (systemd, a container), which restarts it and keeps its log")
	case o.bindIPAll && set["bind_ip"]:
		return errors.New("--bind_ip and --bind_ip_all are exclusive")
	case o.maxConns < 1 || o.slowMS < 0:
		return errors.New("--maxConns must be at least 1 and --slowms not negative")
	}
	if o.bindIPAll {
		o.bindIP = "" // every address: IPv4 and IPv6 where the host has it
	}
	return nil
}

// newLogger writes mongod's log lines (logformat.go):
// {"t":{"$date":…},"s":"I","c":…,"id":…,"ctx":…,"msg":…,"attr":{…}}.
func newLogger(w io.Writer) zerolog.Logger {
	zerolog.TimestampFieldName = "t"
	zerolog.LevelFieldName = "s"
	zerolog.MessageFieldName = "msg"
	zerolog.TimeFieldFormat = time.RFC3339Nano
	zerolog.DurationFieldInteger = true // durationMillis a whole number, as mongod's
	zerolog.LevelFieldMarshalFunc = func(l zerolog.Level) string {
		switch l {
		case zerolog.WarnLevel:
			return "W"
		case zerolog.ErrorLevel:
			return "E"
		case zerolog.FatalLevel, zerolog.PanicLevel:
			return "F"
		case zerolog.DebugLevel:
			return "D1"
		case zerolog.TraceLevel:
			return "D2"
		}
		return "I"
	}
	return zerolog.New(mongodLog{w}).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "ping" {
		return runPing(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "inspect" {
		return runInspect(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "import" {
		return runImport(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "bundle" {
		return runBundle(args[1:], stdout, stderr)
	}
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if o.version {
		fmt.Fprintf(stdout, "dumbodb version %s (MongoDB wire protocol, 8.0 compatible)\n", server.Version)
		return 0
	}
	ring := server.NewLogRing(1024)
	var logOut io.Writer = stdout
	var lf *logFile
	if o.logPath != "" {
		if lf, err = openLogFile(o.logPath, o.logAppend, o.logRotate); err != nil {
			fmt.Fprintf(stderr, "dumbodb: %v\n", err)
			return 1
		}
		defer lf.Close()
		logOut = lf
	}
	// The level is the process's (setParameter logLevel changes it):
	// lines below it are dropped before they are built.
	setLogLevels(o.verbosity, nil)
	log := newLogger(io.MultiWriter(logOut, ring)).Level(zerolog.TraceLevel)
	routeLogrus(log)
	defer rotateOnSIGUSR1(lf, log)() // before the server answers: a signal meanwhile would end the process
	setMemoryLimit(o.cacheMB, log)
	sampleHeapFor(o.heapProfile)
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb: %v\n", err)
		return 1
	}
	defer stopProfile()
	early, err := listenEarly(o)
	if err != nil {
		log.Error().Str("c", "NETWORK").Err(err).Msg("cannot listen")
		fmt.Fprintf(stderr, "dumbodb: %v\n", err)
		return 1
	}
	engine, err := storage.Open(o.dataDir, storage.Options{
		Language:             server.StorageLanguage(),
		CacheBytes:           int64(o.cacheMB) << 20,
		CheckpointInterval:   time.Duration(o.syncdelay) * time.Second,
		Author:               o.author,
		LargeDocThreshold:    largeDocOption(o.largeDoc),
		IdleDatabaseTimeout:  idleOption(o.idleDBSeconds),
		ChangeRetention:      time.Duration(o.changeSeconds) * time.Second,
		ChangeRetentionBytes: int64(o.changeMB) << 20,
		AutoGCMaxBytes:       autoGCOption(o.autoGCMaxMB),
		UndropRetention:      time.Duration(max(o.undropHours, 0)) * time.Hour,
	}, log)
	if err != nil {
		log.Error().Str("c", "STORAGE").Err(err).Msg("cannot open the data directory")
		fmt.Fprintf(stderr, "dumbodb: %v\n", err)
		if early != nil {
			early.Close()
		}
		return 1
	}
	cfg := server.Config{
		BindIPs: strings.Split(o.bindIP, ","), Port: o.port, UnixSocket: o.unixSocket,
		Argv: append([]string{"dumbodb"}, args...), TestCommands: o.testCmds, AutoCommit: o.autoCommit,
		BusyPoll:      time.Duration(o.busyPollMicros) * time.Microsecond,
		InFlightBytes: int64(o.inFlightMB) << 20,
		MessageStall:  time.Duration(o.stallSeconds) * time.Second,
		ReplSet:       o.replSet, Standalone: o.standalone, AdvertiseHost: o.advertiseHost, Auth: o.auth, TLS: o.tls,
		NoScripting:    o.noScripting,
		ReplicaOf:      o.replicaOf,
		HTTPAddress:    o.httpAddress,
		HTTPDebug:      o.httpDebug,
		EarlyHTTP:      early,
		ReplicaPoll:    time.Duration(max(o.replicaPoll, 1)) * time.Second,
		MaxConns:       o.maxConns,
		SlowOp:         max(time.Duration(o.slowMS)*time.Millisecond, time.Nanosecond),
		SlowOpSkipRate: 1 - o.sampleRate,
		Quiet:          o.quiet,
		LogLevel:       o.verbosity,
		SetLogLevel:    setLogLevels,
		MemoryRelease:  time.Duration(max(o.releaseSeconds, 0)) * time.Second,
	}
	if lf != nil {
		cfg.RotateLog = lf.Rotate
	}
	srv := server.New(cfg, engine, log, ring)
	if o.httpAddress != "" {
		if err := mountConsole(srv, o); err != nil {
			fmt.Fprintf(stderr, "dumbodb: %v\n", err)
			engine.Close()
			return 1
		}
	}
	err = setStartupParameters(srv, o.setParams, o.componentLevels)
	if err == nil {
		err = setDefaultProfile(srv, o.profile, o.profileFilter)
	}
	if err != nil {
		fmt.Fprintf(stderr, "dumbodb: %v\n", err)
		engine.Close()
		return 1
	}
	if err := srv.Listen(); err != nil {
		log.Error().Str("c", "NETWORK").Err(err).Msg("cannot listen")
		fmt.Fprintf(stderr, "dumbodb: %v\n", err)
		engine.Close()
		return 1
	}
	if err := createInitialUser(srv, log); err != nil {
		fmt.Fprintf(stderr, "dumbodb: %v\n", err)
		engine.Close()
		return 1
	}
	if err := writePidFile(o.pidFile); err != nil {
		fmt.Fprintf(stderr, "dumbodb: --pidfilepath: %v\n", err)
		srv.Shutdown(context.Background())
		engine.Close()
		return 1
	}
	srv.Serve()
	log.Info().Str("c", "CONTROL").Str("dataDir", o.dataDir).Int("pid", os.Getpid()).
		Str("version", server.Version).Msg("DumboDB started")
	code := waitForSignal(srv, engine, o.heapProfile, log)
	if o.pidFile != "" {
		os.Remove(o.pidFile)
	}
	return code
}

// writePidFile writes the process id to path ("": none), as mongod's
// --pidfilepath does.
func writePidFile(path string) error {
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// createInitialUser makes the first user from the environment, as the
// official mongo image does with MONGO_INITDB_ROOT_USERNAME and
// MONGO_INITDB_ROOT_PASSWORD (DUMBODB_ROOT_USERNAME and
// DUMBODB_ROOT_PASSWORD too): a root user of admin, made only while no
// user exists, so that a container can start with --auth and be usable.
func createInitialUser(srv *server.Server, log zerolog.Logger) error {
	name := cmp.Or(os.Getenv("DUMBODB_ROOT_USERNAME"), os.Getenv("MONGO_INITDB_ROOT_USERNAME"))
	pwd := cmp.Or(os.Getenv("DUMBODB_ROOT_PASSWORD"), os.Getenv("MONGO_INITDB_ROOT_PASSWORD"))
	switch {
	case name == "" && pwd == "":
		return nil
	case name == "" || pwd == "":
		return errors.New("DUMBODB_ROOT_USERNAME and DUMBODB_ROOT_PASSWORD (or the MONGO_INITDB_ names) must be set together")
	}
	made, err := srv.CreateInitialUser(name, pwd)
	if err != nil {
		return fmt.Errorf("initial user from the environment: %w", err)
	}
	if made {
		log.Info().Str("c", "ACCESS").Str("user", name).Str("db", "admin").Msg("created the initial root user from the environment")
	}
	return nil
}

func waitForSignal(srv *server.Server, engine *storage.Engine, heapProfile string, log zerolog.Logger) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	timeout := 30 * time.Second
	select {
	case sig := <-sigs:
		log.Info().Str("c", "CONTROL").Str("signal", sig.String()).Msg("shutting down")
	case req := <-srv.ShutdownRequested():
		log.Info().Str("c", "CONTROL").Bool("force", req.Force).Msg("shutting down at the shutdown command")
		timeout = req.Timeout
	}
	if err := writeHeapProfile(heapProfile); err != nil {
		log.Error().Str("c", "CONTROL").Err(err).Msg("--heapProfile")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	srv.Shutdown(ctx)
	if err := engine.Close(); err != nil {
		log.Error().Str("c", "STORAGE").Err(err).Msg("closing storage")
		return 1
	}
	log.Info().Str("c", "CONTROL").Msg("shutdown complete")
	return 0
}

// idleOption maps the flag (0: never) onto storage's option (0: default).
func idleOption(seconds int) time.Duration {
	if seconds <= 0 {
		return -1
	}
	return time.Duration(seconds) * time.Second
}

// autoGCOption maps --autoGCMaxMB (0: off) onto storage's option (0:
// default, negative: off).
func autoGCOption(mb int) int64 {
	if mb <= 0 {
		return -1
	}
	return int64(mb) << 20
}

// largeDocOption maps the flag (0: off) onto storage's option (0: default).
func largeDocOption(flag int) int {
	if flag <= 0 {
		return -1
	}
	return flag
}

// memoryOverheadMB is what the server holds beside --cacheSizeMB whatever
// the workload (docs/design/resources.md, "Memory bounded by the budget";
// dumbobench's ServerRSSOverheadMB): the node cache, a checkpoint's
// memtable, an idle server and the requests being handled.
const memoryOverheadMB = 256 + 16 + 68 + 32

// binaryFilePagesMB is what resident memory holds beside the runtime's
// own: the binary's mapped pages (51 of an idle server's 68 MB, up to 56
// under load), and 20 MB for the runtime passing its soft limit when what
// is live nears it (anonymous memory peaked 12 MB above the limit).
const binaryFilePagesMB = 56 + 20

// setMemoryLimit gives the Go runtime a soft limit of the budget plus the
// fixed overhead, less the binary's file pages (which count in resident
// memory but not in the runtime's, with a margin for the runtime passing
// its limit; binaryFilePagesMB): the collector then runs before the
// heap's garbage (GOGC lets the heap reach twice what is live) takes the
// process past budget plus overhead. That bound holds while what is live
// stays under the limit, which the edit budget's accounting
// (storage.editSize) and the overhead's parts make so; past it the
// runtime lets the heap grow rather than collect without end. It costs
// CPU when the live heap nears the limit: dumbobench's Raw/InsertMany took
// 15.8 µs of server CPU per document under a limit of 545 MB (RSS peak
// 590 MB) against 12.5 under 852 MB (805 MB). A GOMEMLIMIT in the
// environment wins (GOMEMLIMIT=off: no limit), as the runtime reads it.
func setMemoryLimit(cacheMB int, log zerolog.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit := int64(cacheMB+memoryOverheadMB-binaryFilePagesMB) << 20
	debug.SetMemoryLimit(limit)
	log.Info().Str("c", "CONTROL").Int64("memoryLimitMB", limit>>20).Msg("Go heap soft limit")
}

// startCPUProfile profiles the whole run into path (nothing when empty);
// the returned function ends the profile and writes it out, at shutdown.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuProfile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuProfile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// sampleHeapFor turns the Go runtime's sampling of allocations off unless
// a heap profile is asked for (path set). The runtime keeps a record for
// every call stack it ever sampled, for the life of the process, and only
// a heap profile reads them: in dumbobench's 30-minute soak that memory
// grew with every code path the mix reached (docs/design/resources.md,
// "What the resident memory is made of";
// docs/perf/2026-12-03-report-soak-no-sampling.md).
func sampleHeapFor(path string) {
	if path == "" {
		runtime.MemProfileRate = 0
	}
}

// writeHeapProfile writes the live heap, after a collection, into path
// (nothing when empty): what the server holds while still serving, so
// that two runs of different lengths show what grew.
func writeHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// logLevel is the logger's level for mongod's verbosity: 0 info, 1
// debug, 2 and up trace.
func logLevel(verbosity int) zerolog.Level {
	switch {
	case verbosity >= 2:
		return zerolog.TraceLevel
	case verbosity == 1:
		return zerolog.DebugLevel
	}
	return zerolog.InfoLevel
}

// authMechanismsParameter is the one --setParameter whose value is a
// list, not a number: the mechanisms clients may authenticate with.
const authMechanismsParameter = "authenticationMechanisms"

// setStartupParameters applies --setParameter name=value and
// --componentVerbosity component=level.
func setStartupParameters(srv *server.Server, params, components []string) error {
	for _, p := range params {
		name, v, _ := strings.Cut(p, "=")
		if name == authMechanismsParameter {
			if err := srv.SetAuthMechanisms(v); err != nil {
				return err
			}
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64) // checked by loadSettings
		if err := srv.SetStartupParameter(name, n); err != nil {
			return err
		}
	}
	for _, c := range components {
		name, v, _ := strings.Cut(c, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("--componentVerbosity %s: the level must be a whole number", c)
		}
		if err := srv.SetComponentVerbosity(name, n); err != nil {
			return fmt.Errorf("--componentVerbosity %s: %w", c, err)
		}
	}
	return nil
}

// setDefaultProfile applies --profile and --profileFilter.
func setDefaultProfile(srv *server.Server, level int, filter string) error {
	var doc bson.Raw
	if filter != "" {
		if err := bson.UnmarshalExtJSON([]byte(filter), false, &doc); err != nil {
			return fmt.Errorf("--profileFilter: %w", err)
		}
	}
	if err := srv.SetDefaultProfile(level, bsoncore.Document(doc)); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	return nil
}

// rotateOnSIGUSR1 rotates the log file at each SIGUSR1, as mongod does,
// until the returned function is called (lf nil: no file, nothing to
// rotate, the signal is left alone).
func rotateOnSIGUSR1(lf *logFile, log zerolog.Logger) func() {
	if lf == nil {
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-sigs:
				if err := lf.Rotate(); err != nil {
					log.Error().Str("c", "CONTROL").Err(err).Msg("log rotation failed")
				} else {
					log.Info().Str("c", "CONTROL").Msg("Log rotation initiated")
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// listenEarly opens the HTTP listener before the data directory is
// opened, so that /livez answers and /readyz says "recovering" while it
// recovers (server.EarlyHTTP); nil without --httpAddress, or with TLS,
// whose listener opens with the server.
func listenEarly(o *serverFlags) (*server.EarlyHTTP, error) {
	if o.httpAddress == "" || (o.tls.Mode != "" && o.tls.Mode != server.TLSDisabled) {
		return nil, nil
	}
	return server.ListenEarlyHTTP(o.httpAddress)
}

// mountConsole serves the web console on the HTTP listener (the server
// closes it when it shuts down); its pages reach the server through
// in-process connections.
func mountConsole(srv *server.Server, o *serverFlags) error {
	con, err := console.New(console.Options{
		Dial:   func(context.Context) (net.Conn, error) { return srv.Pipe(), nil },
		Auth:   o.auth,
		Secure: o.tls.Mode != "" && o.tls.Mode != "disabled",
	})
	if err != nil {
		return err
	}
	srv.HandleHTTP(console.Prefix, con)
	return nil
}
