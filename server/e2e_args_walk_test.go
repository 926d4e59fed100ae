package server_test

import (
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/dumbodb/dumbodb/server"
)

// TestCommandArgumentsWalk walks the command table: each command is run
// once to learn the fields it declares, then again with each declared
// field given a value no field takes (MinKey), and once with a field no
// command takes. A declared field must refuse the MinKey with an error
// (not InternalError, which an ignored field without a reason gives, nor
// UnknownField), so no field is accepted and dropped by accident; the
// unknown field must be UnknownField (40415). Every row of ignoredArgs
// must be a field some command declares.
func TestCommandArgumentsWalk(t *testing.T) {
	ts := startServer(t, func(c *server.Config) { c.TestCommands = true })
	cl := ts.client()
	var mu sync.Mutex
	declared := map[string][]string{}
	stop := server.WatchDeclaredArgs(func(cmd string, fields []string) {
		mu.Lock()
		defer mu.Unlock()
		declared[cmd] = fields
	})
	defer stop()
	fieldsOf := func(name string) ([]string, bool) {
		mu.Lock()
		defer mu.Unlock()
		f, ok := declared[name]
		return f, ok
	}
	for name, kind := range commandFirstValues {
		if walkFirstValues[kind] == nil {
			t.Errorf("%s: no first value of kind %q for the walk", name, kind)
		}
	}
	names := server.CommandNames()
	var sorted []string
	for name := range names {
		sorted = append(sorted, name)
	}
	sort.Strings(sorted)
	var unreached []string
	for _, name := range sorted {
		if walkSkips[name] != "" {
			continue
		}
		db := cl.Database("walkdb")
		if names[name] {
			db = cl.Database("admin")
		}
		// Some commands need the database (dropDatabase, earlier in
		// the walk, may have dropped it).
		if _, err := cl.Database("walkdb").Collection("walkcoll").InsertOne(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		base := walkBase(name)
		if strings.HasPrefix(name, "dumbo") || strings.HasPrefix(name, "dolt") {
			if _, ok := commandFirstValues[name]; !ok {
				base = bson.D{{Key: name, Value: 1}}
			}
		}
		_, _ = run(t, db, base)
		fields, ok := fieldsOf(name)
		if !ok {
			unreached = append(unreached, name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			walkFields(t, db, name, base, fields)
		})
	}
	for _, name := range unreached {
		if walkOwnParsers[name] == "" {
			t.Errorf("%s does not reach the argument layer", name)
		}
	}
	for name := range walkOwnParsers {
		if !contains(unreached, name) {
			t.Errorf("%s reaches the argument layer: take it out of walkOwnParsers", name)
		}
	}
	for path, stmt := range walkStatements {
		cmdName, array, _ := strings.Cut(path, ".")
		mustRun(t, cl.Database("walkdb"), bson.D{{Key: cmdName, Value: "walkcoll"}, {Key: array, Value: bson.A{stmt}}})
		fields, ok := fieldsOf(path)
		if !ok {
			t.Errorf("%s: its statements were not parsed", path)
			continue
		}
		t.Run(path, func(t *testing.T) { walkStatementFields(t, cl.Database("walkdb"), path, stmt, fields) })
	}
	mu.Lock()
	defer mu.Unlock()
	for row := range server.IgnoredArgs() {
		cmd, field, _ := strings.Cut(row, ".")
		if !contains(declared[cmd], field) {
			t.Errorf("ignoredArgs row %s: no command declares it", row)
		}
	}
}

// walkFields sends each field with MinKey, then an unknown field.
func walkFields(t *testing.T, db *mongo.Database, name string, base bson.D, fields []string) {
	for _, f := range fields {
		if walkAnyType[name+"."+f] != "" {
			continue
		}
		cmd := append(append(bson.D{}, base...), bson.E{Key: f, Value: bson.MinKey{}})
		_, err := run(t, db, cmd)
		var ce mongo.CommandError
		switch {
		case err == nil:
			t.Errorf("%s.%s accepts a MinKey: a field accepted and dropped?", name, f)
		case !errors.As(err, &ce):
			t.Errorf("%s.%s: %v", name, f, err)
		case ce.Code == 1 || ce.Code == 40415:
			t.Errorf("%s.%s with a MinKey: %d %s", name, f, ce.Code, ce.Message)
		}
	}
	cmd := append(append(bson.D{}, base...), bson.E{Key: "walkUnknownField", Value: 1})
	_, err := run(t, db, cmd)
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 40415 {
		t.Errorf("%s with an unknown field: want 40415, got %v", name, err)
	}
}

// walkStatements are the arrays of sub-documents with fields of their
// own, each with a valid statement the walk changes one field of.
var walkStatements = map[string]bson.D{
	"update.updates": {{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}},
	"delete.deletes": {{Key: "q", Value: bson.D{}}, {Key: "limit", Value: 0}},
}

// walkStatementFields sends a statement with each of its fields a MinKey,
// then with an unknown field, which must be named by its element.
func walkStatementFields(t *testing.T, db *mongo.Database, path string, stmt bson.D, fields []string) {
	cmdName, array, _ := strings.Cut(path, ".")
	send := func(e bson.E) error {
		st := bson.D{}
		for _, x := range stmt {
			if x.Key != e.Key {
				st = append(st, x)
			}
		}
		st = append(st, e)
		_, err := run(t, db, bson.D{{Key: cmdName, Value: "walkcoll"}, {Key: array, Value: bson.A{st}}})
		return err
	}
	for _, f := range fields {
		var ce mongo.CommandError
		var we mongo.WriteException
		switch err := send(bson.E{Key: f, Value: bson.MinKey{}}); {
		case err == nil:
			t.Errorf("%s.%s accepts a MinKey: a field accepted and dropped?", path, f)
		case errors.As(err, &we):
			if len(we.WriteErrors) == 0 || we.WriteErrors[0].Code == 1 {
				t.Errorf("%s.%s with a MinKey: %v", path, f, err)
			}
		case !errors.As(err, &ce) || ce.Code == 1 || ce.Code == 40415:
			t.Errorf("%s.%s with a MinKey: %v", path, f, err)
		}
	}
	var ce mongo.CommandError
	err := send(bson.E{Key: "walkUnknownField", Value: 1})
	if !errors.As(err, &ce) || ce.Code != 40415 || !strings.Contains(ce.Message, path+".0.walkUnknownField") {
		t.Errorf("%s with an unknown field: want 40415 naming the element, got %v", path, err)
	}
}

// walkBase is the command with its first field, and the fields it needs
// to reach its argument walk.
func walkBase(name string) bson.D {
	if kind, ok := commandFirstValues[name]; ok {
		return bson.D{{Key: name, Value: walkFirstValues[kind]}}
	}
	return bson.D{{Key: name, Value: "walkcoll"}}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// walkSkips are the commands the walk does not run, and why.
var walkSkips = map[string]string{
	"shutdown": "stops the server the walk talks to",
}

// commandFirstValues are the kinds of first value of the commands whose
// first value is not a collection name, from the command table.
var commandFirstValues = server.CommandFirstValues()

// walkFirstValues are a first value of each of those kinds.
var walkFirstValues = map[string]any{
	"branch":     "main",
	"collection": "walkcoll",
	"level":      int32(-1),
	"failPoint":  "failCommand",
	"list":       bson.A{},
	"command":    bson.D{{Key: "find", Value: "walkcoll"}},
	"cursorID":   int64(1),
}

// walkAnyType are the declared fields that take a value of any type, as
// on mongod, and why.
var walkAnyType = map[string]string{}

// walkOwnParsers are the commands that do not reach parseArgs, and why:
// mongod does not check their fields either, or their fields are data.
var walkOwnParsers = map[string]string{
	"buildInfo":           "takes any field, as mongod's does",
	"buildinfo":           "takes any field, as mongod's does",
	"createSearchIndexes": "refused whatever its fields: SearchNotEnabled",
	"currentOp":           "its fields are filters on the operations",
	"dropSearchIndex":     "refused whatever its fields: SearchNotEnabled",
	"getCmdLineOpts":      "takes any field, as mongod's does",
	"getLog":              "takes any field, as mongod's does",
	"getParameter":        "its fields name parameters",
	"hello":               "takes the fields clients add to a handshake, as mongod's does",
	"hostInfo":            "takes any field, as mongod's does",
	"isMaster":            "takes the fields clients add to a handshake, as mongod's does",
	"ismaster":            "takes the fields clients add to a handshake, as mongod's does",
	"listCommands":        "takes any field, as mongod's does",
	"logout":              "takes any field, as mongod's does",
	"ping":                "takes any field, as mongod's does",
	"replSetGetStatus":    "takes any field, as mongod's does",
	"replSetInitiate":     "refused whatever its fields: the set is initiated",
	"serverStatus":        "its fields choose sections",
	"setParameter":        "its fields name parameters",
	"testVersion1":        "a test command of the Stable API tests, taking any field",
	"testVersion2":        "a test command of the Stable API tests, taking any field",
	"updateSearchIndex":   "refused whatever its fields: SearchNotEnabled",
	"whatsmyuri":          "takes any field, as mongod's does",
}
