package server

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/storage"
)

// catalogCounts is serverStatus.catalogStats: the collections of every
// database's default branch by kind, counted as mongod counts its catalog.
// Internal ones are those of admin, config and local and those named
// system.*; a time-series collection counts once, under timeseries (its
// buckets collection is part of it). DumboDB encrypts no collection, so
// csfle and queryableEncryption stay 0.
type catalogCounts struct {
	collections, capped, clustered, timeseries, views, internalCollections, internalViews int32
}

// catalogStatsStatus counts from each database's default branch as held
// in memory, without reopening the idle ones (storage.Engine.Visit).
func (s *Server) catalogStatsStatus(ctx context.Context) bsoncore.Document {
	var c catalogCounts
	names, _ := s.engine.DatabaseNames()
	for _, name := range names {
		_ = s.engine.Visit(ctx, name, func(d *storage.Database) error {
			colls, err := d.DefaultCatalog(ctx)
			c.add(name, colls)
			return err
		})
	}
	return bsoncore.NewDocumentBuilder().
		AppendInt32("collections", c.collections).AppendInt32("capped", c.capped).
		AppendInt32("clustered", c.clustered).AppendInt32("timeseries", c.timeseries).
		AppendInt32("views", c.views).AppendInt32("internalCollections", c.internalCollections).
		AppendInt32("internalViews", c.internalViews).
		AppendInt32("csfle", 0).AppendInt32("queryableEncryption", 0).Build()
}

func (c *catalogCounts) add(db string, colls []storage.CollectionInfo) {
	for _, ci := range colls {
		internal := db == "admin" || db == "config" || db == "local" || strings.HasPrefix(ci.Name, "system.")
		_, ts := ci.Options.Lookup("timeseries").DocumentOK()
		switch {
		case ts && strings.HasPrefix(ci.Name, "system.buckets."):
			// counted with its time-series collection
		case ts:
			c.timeseries++
		case ci.IsView() && internal:
			c.internalViews++
		case ci.IsView():
			c.views++
		case internal:
			c.internalCollections++
		default:
			c.collections++
			if ci.Capped() {
				c.capped++
			}
			if ci.Options.Lookup("clusteredIndex").Type != 0 {
				c.clustered++
			}
		}
	}
}
