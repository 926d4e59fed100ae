package server

import (
	"github.com/dumbodb/dumbodb/mongoerr"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// cmdDumboConfig reads a database's version-control configuration
// ({dumboConfig: 1}) or changes it: {autoCommit: true|false} switches
// automatic commits for the database whatever --autoCommit says, and
// {autoCommit: null} lets it follow the flag again. The answer is the
// configuration in effect, and where it comes from.
func cmdDumboConfig(r *request) (bsoncore.Document, error) {
	var autoCommit bsoncore.Value
	err := r.parseArgs(map[string]fieldHandler{
		"autoCommit": func(v bsoncore.Value) error {
			if v.Type != bsoncore.TypeBoolean && v.Type != bsoncore.TypeNull {
				return typeMismatch(r.name, "autoCommit", v, "bool")
			}
			autoCommit = v
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if r.rev != "" {
		return nil, mongoerr.New(mongoerr.BadValue, "dumboConfig configures a database, not a revision of it: run it on %s", r.db)
	}
	if autoCommit.Type != 0 {
		if err := r.setAutoCommit(autoCommit); err != nil {
			return nil, err
		}
	}
	source := "server"
	if _, ok := r.autoCommitSwitch(); ok {
		source = "database"
	}
	return bsoncore.NewDocumentBuilder().AppendBoolean("autoCommit", r.c.s.autoCommitOn(r.db)).
		AppendString("autoCommitFrom", source).AppendDouble("ok", 1).Build(), nil
}

// autoCommitSwitch is the database's own automatic-commit switch, if set.
func (r *request) autoCommitSwitch() (on, ok bool) {
	if v, found := r.c.s.engine.Setting(autoCommitSetting); found {
		on, ok = v.Document().Lookup(r.db).BooleanOK()
	}
	return on, ok
}

// setAutoCommit sets (a boolean) or clears (null) the database's switch
// in the settings file.
func (r *request) setAutoCommit(v bsoncore.Value) error {
	b := bsoncore.NewDocumentBuilder()
	if cur, ok := r.c.s.engine.Setting(autoCommitSetting); ok {
		els, _ := cur.Document().Elements()
		for _, el := range els {
			if el.Key() != r.db {
				b.AppendValue(el.Key(), el.Value())
			}
		}
	}
	if v.Type == bsoncore.TypeBoolean {
		b.AppendBoolean(r.db, v.Boolean())
	}
	doc := b.Build()
	return r.c.s.engine.SetSetting(r.ctx, autoCommitSetting, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
}
