package server

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The default read and write concerns (getDefaultRWConcern,
// setDefaultRWConcern): what a command that names no readConcern or
// writeConcern runs with. Set ones are kept in the settings file
// (docs/format/settings.md) under rwConcernDefaultsSetting; the server
// holds the current ones in memory.

const rwConcernDefaultsSetting = "rwConcernDefaults"

// rwDefaults is the settings file's rwConcernDefaults document; nil: never
// set.
type rwDefaults bsoncore.Document

// readConcern and writeConcern are the set defaults (nil: the implicit
// one).
func (d rwDefaults) readConcern() bsoncore.Document {
	rc, _ := bsoncore.Document(d).Lookup("defaultReadConcern").DocumentOK()
	return rc
}

func (d rwDefaults) writeConcern() bsoncore.Document {
	wc, _ := bsoncore.Document(d).Lookup("defaultWriteConcern").DocumentOK()
	return wc
}

// loadRWDefaults reads the set defaults from the settings file.
func (s *Server) loadRWDefaults() {
	if s.engine == nil {
		return
	}
	if v, ok := s.engine.Setting(rwConcernDefaultsSetting); ok {
		if doc, ok := v.DocumentOK(); ok {
			d := rwDefaults(doc)
			s.rwDefaults.Store(&d)
		}
	}
}

func (s *Server) currentRWDefaults() rwDefaults {
	if d := s.rwDefaults.Load(); d != nil {
		return *d
	}
	return nil
}

// implicitWriteConcern is the write concern a command runs with when
// neither it nor setDefaultRWConcern names one, as mongod 8 reports it:
// majority in a replica set (its one member's acknowledgement), w: 1 as
// a standalone.
func (s *Server) implicitWriteConcern() bsoncore.Document {
	w := bsoncore.NewDocumentBuilder()
	if s.topo.replicaSet() {
		w.AppendString("w", "majority")
	} else {
		w.AppendInt32("w", 1)
	}
	return w.AppendInt32("wtimeout", 0).Build()
}

var implicitReadConcern = bsoncore.NewDocumentBuilder().AppendString("level", "local").Build()

// cmdGetDefaultRWConcern is {getDefaultRWConcern: 1, inMemory?}: the
// defaults, set or implicit, and where each comes from. The server's
// memory and the settings file always agree, so inMemory changes nothing.
func cmdGetDefaultRWConcern(r *request) (bsoncore.Document, error) {
	var inMemory bool
	if err := r.parseArgs(map[string]fieldHandler{"inMemory": r.boolArg("inMemory", &inMemory)}); err != nil {
		return nil, err
	}
	return r.c.s.rwDefaultsReply(r.c.s.currentRWDefaults()).AppendDouble("ok", 1).Build(), nil
}

// rwDefaultsReply is the reply of both commands: the defaults in force,
// their sources, and when they were last set.
func (s *Server) rwDefaultsReply(d rwDefaults) *bsoncore.DocumentBuilder {
	rc, rcSource := d.readConcern(), "global"
	if rc == nil {
		rc, rcSource = implicitReadConcern, "implicit"
	}
	wc, wcSource := d.writeConcern(), "global"
	if wc == nil {
		wc, wcSource = s.implicitWriteConcern(), "implicit"
	}
	b := bsoncore.NewDocumentBuilder().AppendDocument("defaultReadConcern", rc).AppendDocument("defaultWriteConcern", wc)
	local := s.started
	if d != nil {
		doc := bsoncore.Document(d)
		b.AppendValue("updateOpTime", doc.Lookup("updateOpTime")).
			AppendValue("updateWallClockTime", doc.Lookup("updateWallClockTime"))
		local = doc.Lookup("updateWallClockTime").Time()
	}
	return b.AppendString("defaultReadConcernSource", rcSource).
		AppendString("defaultWriteConcernSource", wcSource).
		AppendDateTime("localUpdateWallClockTime", local.UnixMilli())
}

// cmdSetDefaultRWConcern is {setDefaultRWConcern: 1, defaultReadConcern?,
// defaultWriteConcern?}: an empty document unsets that default, a missing
// one leaves it as it is.
func cmdSetDefaultRWConcern(r *request) (bsoncore.Document, error) {
	var rc, wc bsoncore.Document
	err := r.parseArgs(map[string]fieldHandler{
		"defaultReadConcern":  r.docArg("defaultReadConcern", &rc),
		"defaultWriteConcern": r.docArg("defaultWriteConcern", &wc),
	})
	if err != nil {
		return nil, err
	}
	if rc == nil && wc == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "At least one of the \"defaultReadConcern\" or \"defaultWriteConcern\" fields must be present")
	}
	if err := checkDefaultReadConcern(rc); err != nil {
		return nil, err
	}
	if err := checkDefaultWriteConcern(wc); err != nil {
		return nil, err
	}
	s := r.c.s
	cur := s.currentRWDefaults()
	if rc == nil {
		rc = cur.readConcern()
	}
	if wc == nil {
		wc = cur.writeConcern()
	}
	t := s.clock.tickWrite()
	b := bsoncore.NewDocumentBuilder()
	if len(rc) > 5 { // not {}
		b.AppendDocument("defaultReadConcern", rc)
	}
	if len(wc) > 5 {
		b.AppendDocument("defaultWriteConcern", withWTimeout(wc))
	}
	next := rwDefaults(b.AppendTimestamp("updateOpTime", t.t, t.i).
		AppendDateTime("updateWallClockTime", time.Now().UnixMilli()).Build())
	if err := s.engine.SetSetting(r.ctx, rwConcernDefaultsSetting, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: next}); err != nil {
		return nil, err
	}
	s.rwDefaults.Store(&next)
	s.log.Info().Str("c", "COMMAND").Str("readConcern", bsoncore.Document(next.readConcern()).String()).
		Str("writeConcern", bsoncore.Document(next.writeConcern()).String()).Msg("Successfully set RWC defaults")
	return s.rwDefaultsReply(next).AppendDouble("ok", 1).Build(), nil
}

// checkDefaultReadConcern takes {} or {level} with local, available or
// majority, as mongod does.
func checkDefaultReadConcern(rc bsoncore.Document) error {
	els, _ := rc.Elements()
	for _, el := range els {
		if el.Key() != "level" {
			return mongoerr.New(mongoerr.BadValue, "A default read concern may only specify a level")
		}
		level, ok := el.Value().StringValueOK()
		if !ok {
			return typeMismatch("defaultReadConcern", "level", el.Value(), "string")
		}
		switch level {
		case "local", "available", "majority":
		case "snapshot", "linearizable":
			return mongoerr.New(mongoerr.BadValue, "Default read concern level must be local, available, or majority; found %s", level)
		default:
			return mongoerr.New(mongoerr.FailedToParse, "Enumeration value '%s' for field 'level' is not a valid value.", level)
		}
	}
	return nil
}

// checkDefaultWriteConcern takes {} or a write concern with w of 1 or
// more, "majority" or a tag; j and wtimeout as in any write concern.
func checkDefaultWriteConcern(wc bsoncore.Document) error {
	els, _ := wc.Elements()
	for _, el := range els {
		v := el.Value()
		switch el.Key() {
		case "w":
			if n, ok := value.AsInt64(v); ok {
				if n < 1 {
					return mongoerr.New(mongoerr.BadValue, "Default write concern must have 'w' field with value >= 1; found w: %d", n)
				}
			} else if _, ok := v.StringValueOK(); !ok {
				return typeMismatch("defaultWriteConcern", "w", v, "int or string")
			}
		case "j", "fsync":
			if _, ok := asBool(v); !ok {
				return typeMismatch("defaultWriteConcern", el.Key(), v, "bool")
			}
		case "wtimeout":
			if n, ok := value.AsInt64(v); !ok || n < 0 {
				return mongoerr.New(mongoerr.FailedToParse, "wtimeout must be a non-negative number")
			}
		default:
			return unknownField("defaultWriteConcern", el.Key())
		}
	}
	return nil
}

// withWTimeout is a write concern with wtimeout: 0 added when it has none,
// as mongod stores defaults.
func withWTimeout(wc bsoncore.Document) bsoncore.Document {
	if _, err := wc.LookupErr("wtimeout"); err == nil {
		return wc
	}
	b := bsoncore.NewDocumentBuilder()
	els, _ := wc.Elements()
	for _, el := range els {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendInt32("wtimeout", 0).Build()
}
