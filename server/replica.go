package server

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"

	"github.com/prometheus/client_golang/prometheus"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A read replica (docs/design/replicas.md): Config.ReplicaOf names the
// root its databases are polled from; writes are refused as a mongod
// secondary refuses them.

// DefaultReplicaPoll is how often a replica polls its root.
const DefaultReplicaPoll = 5 * time.Second

func (c Config) replica() bool { return c.ReplicaOf != "" }

// replicaRefused are the actions a replica refuses: every write of data,
// of version control and of users and roles.
const replicaRefused = branchWrites | auth.VCAdmin | auth.CreateUser | auth.DropUser | auth.GrantRole |
	auth.RevokeRole | auth.ChangePassword | auth.ChangeCustomData | auth.CreateRole | auth.DropRole

// refuseOnReplica answers a write on a replica with NotWritablePrimary.
func (r *request) refuseOnReplica(need auth.Action) error {
	if !r.c.s.cfg.replica() || need&replicaRefused == 0 {
		return nil
	}
	return mongoerr.New(mongoerr.NotWritablePrimary, "not primary: this server is a read replica of %s",
		storage.RedactURL(r.c.s.cfg.ReplicaOf))
}

// replicaStatus is what a replica's polls did, for serverStatus.
type replicaStatus struct {
	mu        sync.Mutex
	polls     int64
	failed    int64
	lastError string
	dbs       map[string]*replicaDB
}

type replicaDB struct {
	lastSync, lastChange time.Time
	lastError            string
}

// replicaLoop polls the replica's root until Shutdown: every ReplicaPoll,
// and for an http(s) root also as soon as the primary reports a change
// (a long poll), so that a commit reaches the replica within moments.
func (s *Server) replicaLoop() {
	defer s.wg.Done()
	every := cmp.Or(s.cfg.ReplicaPoll, DefaultReplicaPoll)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.done
		cancel()
	}()
	for ctx.Err() == nil {
		// The token is read before the poll: a change made during it
		// ends the wait below at once.
		token, err := storage.WaitRemoteChange(ctx, s.cfg.ReplicaOf, "", 0)
		s.guard("replica poll", s.replicaPoll)
		if err == nil && token != "" {
			_, err = storage.WaitRemoteChange(ctx, s.cfg.ReplicaOf, token, every)
		}
		if err != nil || token == "" {
			s.sleepOrDone(ctx, every)
		}
	}
}

// replicaPoll runs one poll and records it.
func (s *Server) replicaPoll() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	res, err := s.engine.Follow(ctx, s.cfg.ReplicaOf)
	now := time.Now()
	st := &s.replica
	st.mu.Lock()
	defer st.mu.Unlock()
	st.polls++
	if err != nil {
		st.failed++
		st.lastError = err.Error()
		s.log.Warn().Str("c", "REPL").Err(err).Msg("replica poll failed")
		return
	}
	st.lastError = ""
	if st.dbs == nil {
		st.dbs = map[string]*replicaDB{}
	}
	for _, r := range res {
		db := st.dbs[r.Database]
		if db == nil {
			db = &replicaDB{}
			st.dbs[r.Database] = db
		}
		if r.Err != nil {
			db.lastError = r.Err.Error()
			s.log.Warn().Str("c", "REPL").Str("db", r.Database).Err(r.Err).Msg("replica sync failed")
			continue
		}
		db.lastSync, db.lastError = now, ""
		if r.Changed {
			db.lastChange = now
			s.log.Info().Str("c", "REPL").Str("db", r.Database).Bool("cloned", r.Cloned).
				Dur("durationMillis", now.Sub(start)).Msg("replica synced a change")
		}
	}
}

// synced reports whether a poll has succeeded.
func (st *replicaStatus) synced() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.polls > st.failed
}

// collect sends the replica's metrics (metrics.go).
func (st *replicaStatus) collect(ch chan<- prometheus.Metric) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descReplicaPolls, prometheus.CounterValue, float64(st.polls-st.failed), "ok")
	ch <- prometheus.MustNewConstMetric(descReplicaPolls, prometheus.CounterValue, float64(st.failed), "failed")
	for name, db := range st.dbs {
		if !db.lastSync.IsZero() {
			ch <- prometheus.MustNewConstMetric(descReplicaLag, prometheus.GaugeValue, time.Since(db.lastSync).Seconds(), name)
		}
	}
}

// replicaStatusDoc is serverStatus.replica.
func (s *Server) replicaStatusDoc() bsoncore.Document {
	st := &s.replica
	st.mu.Lock()
	defer st.mu.Unlock()
	now := time.Now()
	dbs := bsoncore.NewDocumentBuilder()
	for _, name := range slices.Sorted(maps.Keys(st.dbs)) {
		db := st.dbs[name]
		d := bsoncore.NewDocumentBuilder()
		if !db.lastSync.IsZero() {
			d.AppendDateTime("lastSync", db.lastSync.UnixMilli()).
				AppendDouble("lagSeconds", now.Sub(db.lastSync).Seconds())
		}
		if !db.lastChange.IsZero() {
			d.AppendDateTime("lastChange", db.lastChange.UnixMilli())
		}
		if db.lastError != "" {
			d.AppendString("lastError", db.lastError)
		}
		dbs.AppendDocument(name, d.Build())
	}
	b := bsoncore.NewDocumentBuilder().
		AppendString("replicaOf", storage.RedactURL(s.cfg.ReplicaOf)).
		AppendInt64("polls", st.polls).AppendInt64("failedPolls", st.failed)
	if st.lastError != "" {
		b.AppendString("lastError", st.lastError)
	}
	return b.AppendDocument("databases", dbs.Build()).Build()
}
