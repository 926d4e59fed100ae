package server

import (
	"context"
	"time"

	"dumbodb/query"
	"dumbodb/storage"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ttlInterval is how often expired documents are deleted (mongod's
// ttlMonitorSleepSecs default).
const ttlInterval = 60 * time.Second

// ttlLoop deletes documents whose TTL index field is older than the
// index's expireAfterSeconds, on every branch, as ordinary writes (so they
// are logged, replicated to commits and seen by version control).
func (s *Server) ttlLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.ttlEvery())
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.guard("TTL pass", func() { s.expireAll(context.Background(), time.Now()) })
		}
	}
}

func (s *Server) ttlEvery() time.Duration {
	if s.cfg.TTLInterval > 0 {
		return s.cfg.TTLInterval
	}
	return ttlInterval
}

func (s *Server) expireAll(ctx context.Context, now time.Time) {
	names, err := s.engine.DatabaseNames()
	if err != nil {
		return
	}
	for _, name := range names {
		d, err := s.engine.Database(ctx, name, false)
		if err != nil || d == nil {
			continue
		}
		branches, err := d.Branches(ctx)
		if err != nil {
			continue
		}
		for _, b := range branches {
			if err := expireBranch(ctx, d, b.Name, now); err != nil {
				s.log.Warn().Str("c", "INDEX").Err(err).Str("db", name).Str("branch", b.Name).Msg("TTL deletion failed")
			}
		}
	}
}

// ttlRule is one TTL index: its field and lifetime.
type ttlRule struct {
	coll, field string
	after       time.Duration
}

func ttlRules(snap *storage.Snapshot) []ttlRule {
	var rules []ttlRule
	for _, ci := range snap.Collections() {
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
func expireBranch(ctx context.Context, d *storage.Database, branch string, now time.Time) error {
	snap, err := d.BranchSnapshot(ctx, branch)
	if err != nil {
		return err
	}
	for _, rule := range ttlRules(snap) {
		cutoff := now.Add(-rule.after).UnixMilli()
		filter := bsoncore.NewDocumentBuilder().AppendDocument(rule.field,
			bsoncore.NewDocumentBuilder().AppendDateTime("$lt", cutoff).Build()).Build()
		f, err := query.CompileFilter(filter)
		if err != nil {
			return err
		}
		err = d.WriteBranch(ctx, branch, func(tx *storage.Tx) error {
			_, err := deleteMatching(ctx, tx, rule.coll, f, false, nil)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
