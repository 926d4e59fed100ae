package server

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/value"
)

// The log's verbosity per component (setParameter logComponentVerbosity,
// systemLog.component.<name>.verbosity): a component's verbosity of -1
// inherits its parent's, a top-level one inherits the global verbosity
// (logLevel).

// logComponents is the one table of components: the name
// logComponentVerbosity gives each (a child after its parent's name and a
// dot), and the code a log line carries in "c", as mongod names both.
var logComponents = []struct{ name, code string }{
	{"accessControl", "ACCESS"},
	{"assert", "ASSERT"},
	{"command", "COMMAND"},
	{"control", "CONTROL"},
	{"executor", "EXECUTOR"},
	{"ftdc", "FTDC"},
	{"geo", "GEO"},
	{"index", "INDEX"},
	{"network", "NETWORK"},
	{"query", "QUERY"},
	{"replication", "REPL"},
	{"replication.election", "ELECTION"},
	{"replication.heartbeats", "REPL_HB"},
	{"replication.initialSync", "INITSYNC"},
	{"replication.rollback", "ROLLBACK"},
	{"sharding", "SHARDING"},
	{"storage", "STORAGE"},
	{"storage.journal", "JOURNAL"},
	{"storage.recovery", "RECOVERY"},
	{"transaction", "TXN"},
	{"write", "WRITE"},
}

func isLogComponent(name string) bool {
	return slices.ContainsFunc(logComponents, func(c struct{ name, code string }) bool { return c.name == name })
}

// logVerbosity holds the components' own verbosities (absent: -1).
type logVerbosity struct {
	mu  sync.Mutex
	own map[string]int
}

// effective is each component's verbosity after inheritance, by log code.
func (v *logVerbosity) effective(global int) map[string]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := map[string]int{}
	for _, c := range logComponents {
		out[c.code] = v.resolve(c.name, global)
	}
	return out
}

func (v *logVerbosity) resolve(name string, global int) int {
	for {
		if n, ok := v.own[name]; ok {
			return n
		}
		parent, _, ok := cutLast(name)
		if !ok {
			return global
		}
		name = parent
	}
}

func cutLast(name string) (string, string, bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return name, "", false
	}
	return name[:i], name[i+1:], true
}

// set sets a component's own verbosity (-1: inherit).
func (v *logVerbosity) set(name string, n int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.own == nil {
		v.own = map[string]int{}
	}
	if n < 0 {
		delete(v.own, name)
	} else {
		v.own[name] = n
	}
}

// tree is getParameter's logComponentVerbosity: the global verbosity and
// each component's own, nested as mongod nests them.
func (v *logVerbosity) tree(global int) bsoncore.Document {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.subtree("", global)
}

func (v *logVerbosity) subtree(prefix string, n int) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendInt32("verbosity", int32(n))
	for _, c := range logComponents {
		parent, child, ok := cutLast(c.name)
		if (prefix == "" && ok) || (prefix != "" && (!ok || parent != prefix)) {
			continue
		}
		if prefix == "" {
			child = c.name
		}
		own, set := v.own[c.name]
		if !set {
			own = -1
		}
		b.AppendDocument(child, v.subtree(c.name, own))
	}
	return b.Build()
}

// setLogComponentVerbosity applies setParameter's logComponentVerbosity
// document: {verbosity?, <component>: {verbosity?, <child>: ...} or a
// number}. Nothing is set unless the whole document is valid.
func (s *Server) setLogComponentVerbosity(v bsoncore.Value) error {
	doc, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "logComponentVerbosity must be a document")
	}
	changes := map[string]int{}
	if err := readComponentVerbosity("", doc, changes); err != nil {
		return err
	}
	for name, n := range changes {
		if name == "" {
			s.logLevel.Store(int32(n))
		} else {
			s.logVerbosity.set(name, n)
		}
	}
	s.applyLogVerbosity()
	return nil
}

func readComponentVerbosity(prefix string, doc bsoncore.Document, changes map[string]int) error {
	els, _ := doc.Elements()
	for _, el := range els {
		name := el.Key()
		if name == "verbosity" {
			n, ok := value.WholeInt64(el.Value())
			if !ok || n < -1 || n > 5 || (prefix == "" && n < 0) {
				return mongoerr.New(mongoerr.BadValue, "verbosity of %s must be a whole number from %d to 5", cmp.Or(prefix, "the log"), map[bool]int{true: 0, false: -1}[prefix == ""])
			}
			changes[prefix] = int(n)
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		if !isLogComponent(name) {
			return mongoerr.New(mongoerr.BadValue, "Invalid component name %s", name)
		}
		if sub, ok := el.Value().DocumentOK(); ok {
			if err := readComponentVerbosity(name, sub, changes); err != nil {
				return err
			}
			continue
		}
		n, ok := value.WholeInt64(el.Value())
		if !ok || n < -1 || n > 5 {
			return mongoerr.New(mongoerr.BadValue, "verbosity of %s must be a whole number from -1 to 5", name)
		}
		changes[name] = int(n)
	}
	return nil
}

// applyLogVerbosity hands the verbosities to the log's writer.
func (s *Server) applyLogVerbosity() {
	if s.cfg.SetLogLevel != nil {
		global := int(s.logLevel.Load())
		s.cfg.SetLogLevel(global, s.logVerbosity.effective(global))
	}
}

// SetComponentVerbosity sets a component's verbosity before the server
// serves (systemLog.component.<name>.verbosity).
func (s *Server) SetComponentVerbosity(name string, n int) error {
	if !isLogComponent(name) {
		return mongoerr.New(mongoerr.BadValue, "Invalid component name %s", name)
	}
	if n < -1 || n > 5 {
		return mongoerr.New(mongoerr.BadValue, "verbosity of %s must be a whole number from -1 to 5", name)
	}
	s.logVerbosity.set(name, n)
	s.applyLogVerbosity()
	return nil
}
