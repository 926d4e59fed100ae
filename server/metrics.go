package server

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"net/http"
)

// Prometheus metrics (docs/design/http.md, "Metrics"), served at /metrics
// on the HTTP listener. Counters of the command path are resolved per
// command once, so a command pays two atomic adds and a histogram
// observation; everything else is read from the server's and the
// engine's own counters when scraped.

// metricsNamespace prefixes every metric's name.
const metricsNamespace = "dumbodb"

// serverMetrics are a server's metrics, in a registry of its own (several
// servers may run in one process: tests, embedded use).
type serverMetrics struct {
	registry  *prometheus.Registry
	commands  map[*command]commandMetrics
	counts    map[string]*commandCounts // by canonical name
	latencies opLatencies
	walSync   prometheus.Histogram
	walBatch  prometheus.Histogram
	ckpt      prometheus.Histogram
	// conflicts counts the documents merges stopped at; streamLag is the
	// time from a change's write to its event's delivery to a stream.
	conflicts prometheus.Counter
	streamLag prometheus.Histogram
}

// commandMetrics are one command's: its latency and its failures, for
// Prometheus; its counts (shared by a command's spellings) and the
// latency class it adds to, for serverStatus.
type commandMetrics struct {
	duration prometheus.Observer
	failures prometheus.Counter
	counts   *commandCounts
	class    *latencyClass
}

// commandCounts are serverStatus.metrics.commands.<name>.
type commandCounts struct {
	total, failed atomic.Int64
}

// latencyClass is one of serverStatus.opLatencies' classes.
type latencyClass struct {
	micros, ops atomic.Int64
}

// opLatencies are serverStatus.opLatencies' classes: reads, writes,
// other commands, and transactions' commits and aborts.
type opLatencies struct {
	reads, writes, commands, transactions latencyClass
}

// classOf is the opLatencies class a command adds to.
func (l *opLatencies) classOf(c *command) *latencyClass {
	switch name := canonicalCommand(c.name); {
	case name == "commitTransaction" || name == "abortTransaction":
		return &l.transactions
	case c.family == reads:
		return &l.reads
	case c.family == writes:
		return &l.writes
	}
	return &l.commands
}

// latencyBuckets span 50 µs to about 30 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 4, 11)

func newServerMetrics(s *Server) *serverMetrics {
	m := &serverMetrics{registry: prometheus.NewRegistry(), commands: map[*command]commandMetrics{},
		counts: map[string]*commandCounts{}}
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "command_duration_seconds",
		Help:    "Time from a command's arrival to its reply, by command (its count is the commands run).",
		Buckets: latencyBuckets,
	}, []string{"command", "family"})
	failures := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "command_failures_total",
		Help: "Commands that answered ok: 0, by command.",
	}, []string{"command", "family"})
	for _, c := range commandsByName {
		name := canonicalCommand(c.name)
		if m.counts[name] == nil {
			m.counts[name] = &commandCounts{}
		}
		m.commands[c] = commandMetrics{
			duration: duration.WithLabelValues(name, string(c.family)),
			failures: failures.WithLabelValues(name, string(c.family)),
			counts:   m.counts[name],
			class:    m.latencies.classOf(c),
		}
	}
	m.walSync = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "wal_sync_duration_seconds",
		Help:    "Time of one write and sync of a database's write-ahead log (its count is the syncs).",
		Buckets: latencyBuckets,
	})
	m.walBatch = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "wal_records_per_sync",
		Help:    "Records one sync of a write-ahead log made durable (group commit).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 12),
	})
	m.ckpt = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "checkpoint_duration_seconds",
		Help:    "Time of one checkpoint of a branch (its count is the checkpoints).",
		Buckets: latencyBuckets,
	})
	m.conflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: metricsNamespace, Name: "merge_conflicts_total",
		Help: "Documents in conflict where a merge, pull, cherry-pick, revert or rebase stopped.",
	})
	m.streamLag = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metricsNamespace, Name: "change_stream_lag_seconds",
		Help:    "Time from a change's write to its event's delivery to a change stream (its count is the events delivered).",
		Buckets: latencyBuckets,
	})
	m.registry.MustRegister(duration, failures, m.walSync, m.walBatch, m.ckpt, m.conflicts, m.streamLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&serverCollector{s: s})
	return m
}

// observe records a command's latency and outcome.
func (m *serverMetrics) observe(c *command, took time.Duration, failed bool) {
	cm, ok := m.commands[c]
	if !ok {
		return
	}
	cm.duration.Observe(took.Seconds())
	cm.counts.total.Add(1)
	cm.class.micros.Add(took.Microseconds())
	cm.class.ops.Add(1)
	if failed {
		cm.failures.Inc()
		cm.counts.failed.Add(1)
	}
}

// failures is the commands that failed, all of them.
func (m *serverMetrics) failures() int64 {
	var n int64
	for _, c := range m.counts {
		n += c.failed.Load()
	}
	return n
}

// LogSynced and Checkpointed make the metrics the engine's observer.
func (m *serverMetrics) LogSynced(records int, d time.Duration) {
	m.walSync.Observe(d.Seconds())
	m.walBatch.Observe(float64(records))
}

func (m *serverMetrics) Checkpointed(d time.Duration) { m.ckpt.Observe(d.Seconds()) }

// handler serves the registry in Prometheus' text format.
func (m *serverMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// serverCollector reads the server's and the engine's counters at each
// scrape.
type serverCollector struct{ s *Server }

var (
	descConnections = prometheus.NewDesc(metricsNamespace+"_connections",
		"Client connections open now.", nil, nil)
	descConnectionsCreated = prometheus.NewDesc(metricsNamespace+"_connections_created_total",
		"Client connections accepted since the start.", nil, nil)
	descOps = prometheus.NewDesc(metricsNamespace+"_operations_total",
		"Operations by type, as serverStatus.opcounters counts them.", []string{"type"}, nil)
	descCursors = prometheus.NewDesc(metricsNamespace+"_cursors_open",
		"Cursors open now.", nil, nil)
	descSessions = prometheus.NewDesc(metricsNamespace+"_sessions",
		"Logical sessions the server holds.", nil, nil)
	descTransactions = prometheus.NewDesc(metricsNamespace+"_transactions_open",
		"Multi-document transactions started and not yet committed or aborted.", nil, nil)
	descEditBytes = prometheus.NewDesc(metricsNamespace+"_uncheckpointed_bytes",
		"Memory held by acknowledged writes not yet checkpointed, all databases.", nil, nil)
	descOpenDatabases = prometheus.NewDesc(metricsNamespace+"_databases_open",
		"Databases open now (others are closed while idle).", nil, nil)
	descDiskBytes = prometheus.NewDesc(metricsNamespace+"_database_disk_bytes",
		"Bytes a database's files take on disk: data, indexes, history and logs.", []string{"db"}, nil)
	descReplicaLag = prometheus.NewDesc(metricsNamespace+"_replica_lag_seconds",
		"On a read replica, seconds since a database's last successful sync.", []string{"db"}, nil)
	descReplicaPolls = prometheus.NewDesc(metricsNamespace+"_replica_polls_total",
		"On a read replica, polls of the primary, by outcome.", []string{"outcome"}, nil)
)

func (c *serverCollector) Describe(ch chan<- *prometheus.Desc) {
	prometheus.DescribeByCollect(c, ch)
}

func (c *serverCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	st := &s.stats
	ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(st.connsCurrent.Load()))
	ch <- prometheus.MustNewConstMetric(descConnectionsCreated, prometheus.CounterValue, float64(st.connsTotal.Load()))
	for op, n := range map[string]int64{
		"insert": st.opInsert.Load(), "query": st.opQuery.Load(), "update": st.opUpdate.Load(),
		"delete": st.opDelete.Load(), "getmore": st.opGetMore.Load(), "command": st.opCommand.Load(),
	} {
		ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(n), op)
	}
	ch <- prometheus.MustNewConstMetric(descCursors, prometheus.GaugeValue, float64(s.cursors.count()))
	sessions, txns := s.sessions.counts()
	ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(sessions))
	ch <- prometheus.MustNewConstMetric(descTransactions, prometheus.GaugeValue, float64(txns))
	dbs := s.engine.DatabaseStats()
	ch <- prometheus.MustNewConstMetric(descEditBytes, prometheus.GaugeValue, float64(dbs.EditBytes))
	ch <- prometheus.MustNewConstMetric(descOpenDatabases, prometheus.GaugeValue, float64(dbs.Open))
	if s.cfg.replica() {
		s.replica.collect(ch)
	}
	if names, err := s.engine.DatabaseNames(); err == nil {
		for _, n := range names {
			ch <- prometheus.MustNewConstMetric(descDiskBytes, prometheus.GaugeValue, float64(s.engine.SizeOnDisk(n)), n)
		}
	}
}
