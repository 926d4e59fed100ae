package server

import (
	"os"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func okReply() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendDouble("ok", 1).Build()
}

func cmdPing(r *request) (bsoncore.Document, error) { return okReply(), nil }

func cmdBuildInfo(r *request) (bsoncore.Document, error) {
	jsEngine := "none" // --noscripting: $where, $function and $accumulator are refused
	if r.c.s.js.Enabled() {
		jsEngine = "goja" // the engine that runs them (package js)
	}
	va := bsoncore.NewArrayBuilder().AppendInt32(8).AppendInt32(0).AppendInt32(4).AppendInt32(0).Build()
	return bsoncore.NewDocumentBuilder().
		AppendString("version", mongoVersion).
		AppendString("gitVersion", gitVersion).
		AppendArray("modules", bsoncore.NewArrayBuilder().Build()).
		AppendString("allocator", "go").
		AppendString("javascriptEngine", jsEngine).
		AppendString("sysInfo", "deprecated").
		AppendArray("versionArray", va).
		AppendDocument("openssl", bsoncore.NewDocumentBuilder().AppendString("running", "disabled").Build()).
		AppendDocument("buildEnvironment", bsoncore.NewDocumentBuilder().
			AppendString("distmod", "dumbodb").
			AppendString("target_arch", runtime.GOARCH).
			AppendString("target_os", runtime.GOOS).
			AppendString("go", runtime.Version()).Build()).
		AppendInt32("bits", 64).
		AppendBoolean("debug", false).
		AppendInt32("maxBsonObjectSize", maxBsonObjectSize).
		AppendArray("storageEngines", bsoncore.NewArrayBuilder().AppendString("dumbodb").Build()).
		AppendString("dumbodbVersion", Version).
		AppendDouble("ok", 1).Build(), nil
}

// gitVersion is what buildInfo and explain's serverInfo name as the build.
var gitVersion = "dumbodb-" + Version

// fcvVersion is the featureCompatibilityVersion DumboDB answers as.
const fcvVersion = "8.0"

// serverParameters are what getParameter reports.
func (s *Server) serverParameters() map[string]func(*bsoncore.DocumentBuilder, string) {
	return map[string]func(*bsoncore.DocumentBuilder, string){
		"featureCompatibilityVersion": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendDocument(k, bsoncore.NewDocumentBuilder().AppendString("version", fcvVersion).Build())
		},
		"authSchemaVersion": func(b *bsoncore.DocumentBuilder, k string) { b.AppendInt32(k, authSchemaVersion) },
		"authenticationMechanisms": func(b *bsoncore.DocumentBuilder, k string) {
			mechs := bsoncore.NewArrayBuilder()
			for _, m := range s.authMechanisms() {
				mechs.AppendString(m)
			}
			b.AppendArray(k, mechs.Build())
		},
		"cursorTimeoutMillis": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt64(k, runtimeParameters["cursorTimeoutMillis"].get(s))
		},
		"maxBSONDepth": func(b *bsoncore.DocumentBuilder, k string) { b.AppendInt32(k, 200) },
		"internalQueryMaxBlockingSortMemoryUsageBytes": func(b *bsoncore.DocumentBuilder, k string) { b.AppendInt32(k, 100*1024*1024) },
		"logLevel": func(b *bsoncore.DocumentBuilder, k string) { b.AppendInt32(k, s.logLevel.Load()) },
		"quiet":    func(b *bsoncore.DocumentBuilder, k string) { b.AppendBoolean(k, s.quiet.Load()) },
		"logComponentVerbosity": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendDocument(k, s.logVerbosity.tree(int(s.logLevel.Load())))
		},
		"transactionLifetimeLimitSeconds": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt32(k, int32(s.txnLifetime.Load()/int64(time.Second)))
		},
		"changeStreamRetentionSeconds": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt64(k, runtimeParameters["changeStreamRetentionSeconds"].get(s))
		},
		"changeStreamRetentionMB": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt64(k, runtimeParameters["changeStreamRetentionMB"].get(s))
		},
		"internalQueryJavaScriptFnTimeoutMillis": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt32(k, int32(runtimeParameters["internalQueryJavaScriptFnTimeoutMillis"].get(s)))
		},
		"internalQueryJavaScriptHeapSizeLimitMB": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt32(k, int32(runtimeParameters["internalQueryJavaScriptHeapSizeLimitMB"].get(s)))
		},
		"minSnapshotHistoryWindowInSeconds": func(b *bsoncore.DocumentBuilder, k string) {
			b.AppendInt32(k, int32(s.engine.HistoryWindow()/time.Second))
		},
		"ttlMonitorSleepSecs":               s.reportParameter("ttlMonitorSleepSecs"),
		"ttlMonitorEnabled":                 s.reportParameter("ttlMonitorEnabled"),
		"maxIndexBuildMemoryUsageMegabytes": s.reportParameter("maxIndexBuildMemoryUsageMegabytes"),
		// Probed by drivers and their test runners.
		"enableTestCommands": func(b *bsoncore.DocumentBuilder, k string) { b.AppendBoolean(k, s.cfg.TestCommands) },
		"requireApiVersion":  func(b *bsoncore.DocumentBuilder, k string) { b.AppendBoolean(k, false) },
	}
}

// cmdGetParameter answers {getParameter: 1, name: 1, ...} and
// {getParameter: "*"} (every parameter).
func cmdGetParameter(r *request) (bsoncore.Document, error) {
	params := r.c.s.serverParameters()
	all, details := false, false
	if s, ok := r.cmd.Index(0).Value().StringValueOK(); ok && s == "*" {
		all = true
	}
	if d, ok := r.cmd.Index(0).Value().DocumentOK(); ok {
		var err error
		if all, err = getParameterFlag(d, "allParameters"); err != nil {
			return nil, err
		}
		if details, err = getParameterFlag(d, "showDetails"); err != nil {
			return nil, err
		}
	}
	var names []string
	if all {
		for n := range params {
			names = append(names, n)
		}
		sort.Strings(names)
	} else {
		els, _ := r.cmd.Elements()
		for _, el := range els[1:] {
			if _, ok := params[el.Key()]; ok {
				names = append(names, el.Key())
			}
		}
	}
	if len(names) == 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	b := bsoncore.NewDocumentBuilder()
	for _, n := range names {
		if !details {
			params[n](b, n)
			continue
		}
		// showDetails: {value, settableAtRuntime, settableAtStartup}.
		v := bsoncore.NewDocumentBuilder()
		params[n](v, "value")
		// --setParameter takes at start what setParameter takes running,
		// and authenticationMechanisms; logComponentVerbosity is set at
		// start by its own options.
		_, both := runtimeParameters[n]
		b.AppendDocument(n, appendFields(v.Build(), func(d *bsoncore.DocumentBuilder) {
			d.AppendBoolean("settableAtRuntime", both || n == "logComponentVerbosity").
				AppendBoolean("settableAtStartup", both || n == authMechanismsParameter)
		}))
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// getParameterFlag reads showDetails or allParameters, mongod's safeBool:
// a boolean or a number, null or missing meaning false.
func getParameterFlag(d bsoncore.Document, name string) (bool, error) {
	v, err := d.LookupErr(name)
	if err != nil || v.Type == bsoncore.TypeNull {
		return false, nil
	}
	b, ok := asBool(v)
	if !ok {
		return false, typesMismatch("getParameter", name, v, safeBoolTypes)
	}
	return b, nil
}

// appendFields is doc with more fields after its own.
func appendFields(doc bsoncore.Document, more func(*bsoncore.DocumentBuilder)) bsoncore.Document {
	els, _ := doc.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	more(b)
	return b.Build()
}

func cmdGetCmdLineOpts(r *request) (bsoncore.Document, error) {
	argv := bsoncore.NewArrayBuilder()
	for _, a := range r.c.s.cfg.Argv {
		argv.AppendString(a)
	}
	parsed := bsoncore.NewDocumentBuilder().
		AppendDocument("net", bsoncore.NewDocumentBuilder().
			AppendString("bindIp", strings.Join(r.c.s.cfg.BindIPs, ",")).
			AppendInt32("port", int32(r.c.s.cfg.Port)).Build()).
		AppendDocument("storage", bsoncore.NewDocumentBuilder().
			AppendString("dbPath", r.c.s.engine.Dir()).Build()).
		Build()
	return bsoncore.NewDocumentBuilder().
		AppendArray("argv", argv.Build()).
		AppendDocument("parsed", parsed).
		AppendDouble("ok", 1).Build(), nil
}

// cmdGetLog answers {getLog: "*"}, {getLog: "global"} and
// {getLog: "startupWarnings"} from the in-memory ring of recent log lines.
func cmdGetLog(r *request) (bsoncore.Document, error) {
	v := r.cmd.Index(0).Value()
	name, ok := v.StringValueOK()
	switch {
	case v.Type == bsoncore.TypeNull: // the IDL parser reads null as absent
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'getLog.getLog' is missing but a required field")
	case !ok:
		return nil, typeMismatch("getLog", "getLog", v, "string")
	}
	b := bsoncore.NewDocumentBuilder()
	switch name {
	case "*":
		b.AppendArray("names", bsoncore.NewArrayBuilder().AppendString("global").AppendString("startupWarnings").Build())
	case "global", "startupWarnings":
		var lines []string
		if name == "global" && r.c.s.logRing != nil {
			lines = r.c.s.logRing.Lines()
		}
		arr := bsoncore.NewArrayBuilder()
		for _, l := range lines {
			arr.AppendString(l)
		}
		b.AppendInt32("totalLinesWritten", int32(len(lines))).AppendArray("log", arr.Build())
	default:
		return nil, mongoerr.New(mongoerr.OperationFailed, "No log named '%s'", name)
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

func cmdHostInfo(r *request) (bsoncore.Document, error) {
	host, _ := os.Hostname()
	sys := bsoncore.NewDocumentBuilder().
		AppendDateTime("currentTime", time.Now().UnixMilli()).
		AppendString("hostname", host).
		AppendInt32("cpuAddrSize", 64).
		AppendInt64("memSizeMB", totalMemoryMB()).
		AppendInt32("numCores", int32(runtime.NumCPU())).
		AppendString("cpuArch", runtime.GOARCH).
		AppendBoolean("numaEnabled", false).Build()
	osDoc := bsoncore.NewDocumentBuilder().
		AppendString("type", osType()).
		AppendString("name", runtime.GOOS).
		AppendString("version", kernelVersion()).Build()
	return bsoncore.NewDocumentBuilder().
		AppendDocument("system", sys).
		AppendDocument("os", osDoc).
		AppendDocument("extra", bsoncore.NewDocumentBuilder().Build()).
		AppendDouble("ok", 1).Build(), nil
}

func cmdConnectionStatus(r *request) (bsoncore.Document, error) {
	var showPrivileges bool
	if err := r.parseArgs(map[string]fieldHandler{"showPrivileges": r.boolArg("showPrivileges", &showPrivileges)}); err != nil {
		return nil, err
	}
	a := r.c.authState()
	users, roles := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	if a.user != nil {
		users.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("user", a.user.Name).AppendString("db", a.user.DB).Build())
		for _, ref := range a.user.Roles {
			roles.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("role", ref.Role).AppendString("db", ref.DB).Build())
		}
	}
	info := bsoncore.NewDocumentBuilder().AppendArray("authenticatedUsers", users.Build()).
		AppendArray("authenticatedUserRoles", roles.Build())
	if showPrivileges {
		info.AppendArray("authenticatedUserPrivileges", privilegesArray(a.privs))
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("authInfo", info.Build()).AppendDouble("ok", 1).Build(), nil
}

func cmdWhatsMyURI(r *request) (bsoncore.Document, error) {
	return bsoncore.NewDocumentBuilder().
		AppendString("you", r.c.nc.RemoteAddr().String()).
		AppendDouble("ok", 1).Build(), nil
}

func cmdListCommands(r *request) (bsoncore.Document, error) {
	cmds := bsoncore.NewDocumentBuilder()
	for _, c := range commandTable {
		cmds.AppendDocument(c.name, bsoncore.NewDocumentBuilder().
			AppendString("help", c.help).
			AppendBoolean("requiresAuth", !c.need.open).
			AppendBoolean("secondaryOk", true).
			AppendBoolean("adminOnly", c.access == adminOnly).Build())
	}
	return bsoncore.NewDocumentBuilder().AppendDocument("commands", cmds.Build()).AppendDouble("ok", 1).Build(), nil
}

func cmdServerStatus(r *request) (bsoncore.Document, error) {
	s := r.c.s
	host, _ := os.Hostname()
	up := time.Since(s.started)
	st := &s.stats
	conns := bsoncore.NewDocumentBuilder().
		AppendInt32("current", int32(st.connsCurrent.Load())).
		AppendInt32("available", int32(s.cfg.maxConns()-st.connsCurrent.Load())).
		AppendInt32("totalCreated", int32(st.connsTotal.Load())).
		AppendInt32("active", int32(st.connsCurrent.Load())).Build()
	ops := bsoncore.NewDocumentBuilder().
		AppendInt64("insert", st.opInsert.Load()).
		AppendInt64("query", st.opQuery.Load()).
		AppendInt64("update", st.opUpdate.Load()).
		AppendInt64("delete", st.opDelete.Load()).
		AppendInt64("getmore", st.opGetMore.Load()).
		AppendInt64("command", st.opCommand.Load()).Build()
	dbs := s.engine.DatabaseStats()
	storageEngine := bsoncore.NewDocumentBuilder().
		AppendString("name", "dumbodb").
		AppendInt64("openDatabases", dbs.Open).
		AppendInt64("databaseOpens", dbs.Opens).
		AppendInt64("idleDatabaseCloses", dbs.IdleCloses).
		AppendInt64("tableCompactions", dbs.TableCompactions).
		AppendInt64("logRecords", dbs.LogRecords).
		AppendInt64("logBytes", dbs.LogBytes).
		AppendInt64("fieldUpdates", dbs.FieldUpdates).
		AppendInt64("deletionCheckpoints", dbs.DeletionCheckpoints).
		AppendInt64("autoGCs", dbs.AutoGCs).
		AppendInt64("autoGCFreedBytes", dbs.AutoGCFreedBytes).
		AppendInt64("nodeCacheBytes", dbs.NodeCacheBytes).
		AppendInt64("editBytes", dbs.EditBytes).
		AppendInt64("historyBytes", dbs.HistoryBytes).
		AppendInt64("undropBytes", s.engine.DroppedBytes()).Build()
	metrics := bsoncore.NewDocumentBuilder().
		AppendDocument("commands", s.commandsStatus()).
		AppendDocument("cursor", bsoncore.NewDocumentBuilder().
			AppendDocument("open", bsoncore.NewDocumentBuilder().
				AppendInt64("total", int64(s.cursors.count())).Build()).Build()).Build()
	b := bsoncore.NewDocumentBuilder().
		AppendString("host", host).
		AppendString("version", mongoVersion).
		AppendString("dumbodbVersion", Version).
		AppendString("process", "dumbodb").
		AppendInt64("pid", int64(os.Getpid())).
		AppendDouble("uptime", up.Seconds()).
		AppendInt64("uptimeMillis", up.Milliseconds()).
		AppendInt64("uptimeEstimate", int64(up.Seconds())).
		AppendDateTime("localTime", time.Now().UnixMilli())
	sections := []statusSection{
		{"asserts", s.assertsStatus()},
		{"connections", conns},
		{"globalLock", s.globalLockStatus()},
		{"locks", s.locksStatus()},
		{"network", s.networkStatus()},
		{"opLatencies", s.opLatenciesStatus()},
		{"opcounters", ops},
		{"transactions", s.transactionsStatus()},
		{"mem", memStatus()},
		{"goMemory", goMemoryStatus(&s.memReleases)},
		{"storageEngine", storageEngine},
		{"metrics", metrics},
		{"changeStreams", s.changeLogStatus()},
		{"extra_info", extraInfo()},
	}
	if s.cfg.replica() {
		sections = append(sections, statusSection{"replica", s.replicaStatusDoc()})
	}
	if s.topo.replicaSet() {
		sections = append(sections, statusSection{"repl", s.replStatus()})
	}
	if sectionWanted(r, "catalogStats") { // the one section that reads every catalog
		sections = append(sections, statusSection{"catalogStats", s.catalogStatsStatus(r.ctx)})
	}
	for _, sec := range sectionsWanted(r, sections) {
		b.AppendDocument(sec.name, sec.doc)
	}
	return b.AppendDouble("ok", 1).Build(), nil
}

// extraInfo is serverStatus.extra_info as mongod reports it on Linux: the
// process's CPU time (getrusage), which tools (and dumbobench) read to
// know what the server spent.
func extraInfo() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("note", "fields vary by platform")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.AppendInt64("user_time_us", ru.Utime.Sec*1e6+ru.Utime.Usec).
			AppendInt64("system_time_us", ru.Stime.Sec*1e6+ru.Stime.Usec).
			AppendInt64("page_faults", ru.Majflt)
	}
	return b.Build()
}

// changeLogStatus is serverStatus.changeStreams: what the change log
// keeps (docs/format/changes.md, "Retention") and the streams open.
func (s *Server) changeLogStatus() bsoncore.Document {
	l := s.engine.Changes()
	st := l.Stats()
	window, limit := l.Retention()
	first := stampTime(st.FirstAt)
	return bsoncore.NewDocumentBuilder().
		AppendInt64("firstSequence", int64(st.First)).
		AppendInt64("nextSequence", int64(st.Next)).
		AppendTimestamp("earliestClusterTime", first.t, first.i).
		AppendInt64("sizeBytes", st.Bytes).
		AppendInt32("segments", int32(st.Segments)).
		AppendInt64("retentionSeconds", int64(window/time.Second)).
		AppendInt64("retentionMB", limit>>20).
		AppendInt64("openStreams", int64(s.cursors.countStreams())).
		Build()
}

// replStatus is serverStatus.repl, as a replica set member's mongod
// reports it: hello's replica-set fields, isWritablePrimary, and the
// rollback id (no rollback ever happens on a one-member set).
func (s *Server) replStatus() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	s.appendHelloFields(b)
	return b.AppendBoolean("isWritablePrimary", !s.cfg.replica()).AppendInt32("rbid", 1).Build()
}
