package server

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/dumbodb/dumbodb/query"
	"github.com/dumbodb/dumbodb/storage"
	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// defaultTTLSleep is mongod's default ttlMonitorSleepSecs: how long the
// TTL monitor sleeps between passes.
const defaultTTLSleep = 60 * time.Second

// ttlMonitor holds the TTL monitor's parameters, which setParameter
// changes while it runs: ttlMonitorSleepSecs and ttlMonitorEnabled.
type ttlMonitor struct {
	sleep    atomic.Int64 // between passes, as a time.Duration
	disabled atomic.Bool
	// changed wakes the sleeping monitor when sleep changes.
	changed chan struct{}
}

func (m *ttlMonitor) init(sleep time.Duration) {
	m.sleep.Store(int64(cmp.Or(sleep, defaultTTLSleep)))
	m.changed = make(chan struct{}, 1)
}

// setSleep sets ttlMonitorSleepSecs and wakes the monitor to measure its
// sleep by it.
func (m *ttlMonitor) setSleep(d time.Duration) {
	m.sleep.Store(int64(d))
	select {
	case m.changed <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// sleepSecs is ttlMonitorSleepSecs (a sleep under a second, which only
// Config.TTLInterval sets, counts as one).
func (m *ttlMonitor) sleepSecs() int64 {
	return max(1, int64(time.Duration(m.sleep.Load())/time.Second))
}

// sleepFrom sleeps until ttlMonitorSleepSecs after start, as mongod's
// monitor does: a value set meanwhile moves the wake-up, to now if it
// has passed. It reports false when the server shuts down first.
func (m *ttlMonitor) sleepFrom(start time.Time, done <-chan struct{}) bool {
	for {
		wait := time.Until(start.Add(time.Duration(m.sleep.Load())))
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return false
		case <-m.changed:
			t.Stop()
		case <-t.C:
			return true
		}
	}
}

// ttlLoop deletes documents whose TTL index field is older than the
// index's expireAfterSeconds, on every branch, as ordinary writes (so they
// are logged, replicated to commits and seen by version control). It
// sleeps ttlMonitorSleepSecs between passes and skips the pass while
// ttlMonitorEnabled is false.
func (s *Server) ttlLoop() {
	defer s.wg.Done()
	for s.ttl.sleepFrom(time.Now(), s.done) {
		if s.cfg.replica() || s.ttl.disabled.Load() {
			continue // a replica's deletions arrive with its primary's commits
		}
		s.guard("TTL pass", func() { s.expireAll(context.Background(), time.Now()) })
	}
}

func (s *Server) expireAll(ctx context.Context, now time.Time) {
	names, err := s.engine.DatabaseNames()
	if err != nil {
		return
	}
	for _, name := range names {
		err := s.engine.Visit(ctx, name, func(d *storage.Database) error { return s.expireDatabase(ctx, d, now) })
		if err != nil {
			s.log.Warn().Str("c", "INDEX").Err(err).Str("db", name).Msg("TTL pass failed")
		}
	}
}

// expireDatabase runs the TTL indexes of every branch. Their rules come
// from the catalog, which a database closed for idleness answers without
// reopening: after a first pass, which opens each database not yet opened
// since the start once, only databases with TTL indexes are reopened, and
// they close again right after the pass (it is not a use).
func (s *Server) expireDatabase(ctx context.Context, d *storage.Database, now time.Time) error {
	cat, err := d.Catalog(ctx)
	if err != nil {
		return err
	}
	for _, bc := range cat {
		if err := expireBranch(ctx, d, bc.Branch, ttlRules(bc.Collections), now); err != nil {
			s.log.Warn().Str("c", "INDEX").Err(err).Str("db", d.Name()).Str("branch", bc.Branch).Msg("TTL deletion failed")
		}
	}
	return nil
}

// ttlRule is one TTL index: its field and lifetime.
type ttlRule struct {
	coll, field string
	after       time.Duration
}

func ttlRules(colls []storage.CollectionInfo) []ttlRule {
	var rules []ttlRule
	for _, ci := range colls {
		// A time-series collection's TTL removes whole buckets once their
		// latest measurement has expired.
		if o, ok := timeseriesOf(ci); ok && isTimeseries(ci) {
			if secs, ok := value.AsInt64(ci.Options.Lookup("expireAfterSeconds")); ok {
				rules = append(rules, ttlRule{coll: bucketsPrefix + ci.Name, field: "control.max." + o.timeField, after: time.Duration(secs) * time.Second})
			}
			continue
		}
		// A clustered collection's TTL is on its _id (create's expireAfterSeconds).
		if secs, ok := value.AsInt64(ci.Options.Lookup("expireAfterSeconds")); ok && clusteredIndexOf(ci) != nil {
			rules = append(rules, ttlRule{coll: ci.Name, field: "_id", after: time.Duration(secs) * time.Second})
		}
		for _, spec := range ci.Indexes {
			secs, ok := spec.Lookup("expireAfterSeconds").AsInt64OK()
			if !ok {
				if f, isF := spec.Lookup("expireAfterSeconds").DoubleOK(); isF {
					secs, ok = int64(f), true
				}
			}
			key, _ := spec.Lookup("key").DocumentOK()
			els, _ := key.Elements()
			if ok && len(els) == 1 {
				rules = append(rules, ttlRule{coll: ci.Name, field: els[0].Key(), after: time.Duration(secs) * time.Second})
			}
		}
	}
	return rules
}

// expireBranch deletes a branch's expired documents: those whose field is
// a date (or an array holding one) before now - expireAfterSeconds.
func expireBranch(ctx context.Context, d *storage.Database, branch string, rules []ttlRule, now time.Time) error {
	for _, rule := range rules {
		cutoff := now.Add(-rule.after).UnixMilli()
		filter := bsoncore.NewDocumentBuilder().AppendDocument(rule.field,
			bsoncore.NewDocumentBuilder().AppendDateTime("$lt", cutoff).Build()).Build()
		f, err := query.CompileFilter(filter)
		if err != nil {
			return err
		}
		err = writeWaitingForTransactions(ctx, d, branch, func(tx *storage.Tx) error {
			_, err := deleteMatching(ctx, tx, rule.coll, f, false, nil)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
