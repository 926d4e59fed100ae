package server

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/value"
)

// genericArgs are a command's generic fields (genericFields), found in one
// walk of the command as the request is made. Sessions, transactions,
// retryable writes, read and write concerns, maxTimeMS and the Stable API
// each read one or two of them; looking each up in the command scanned
// it again, about a fifth of a findOne's time on the server.
type genericArgs [numGeneric]bsoncore.Value

// genericFieldNames are the fields every command takes (the drivers add
// them), sorted; a list of constant length lets genericArgs be an array.
var genericFieldNames = [...]string{
	"$audit", "$client", "$clusterTime", "$configServerState", "$db", "$queryOptions",
	"$readPreference", "$readPreferenceMode", "apiDeprecationErrors", "apiStrict", "apiVersion",
	"autocommit", "clientOperationKey", "comment", "databaseVersion", "lsid",
	"maxTimeMS", "mayBypassWriteBlocking", "readConcern", "shardVersion", "startTransaction",
	"stmtId", "stmtIds", "txnNumber", "writeConcern",
}

const numGeneric = len(genericFieldNames)

// genericSlot numbers the generic fields; genericFields says which they are.
var (
	genericSlot   = map[string]int{}
	genericFields = map[string]bool{}
)

func init() {
	if !sort.StringsAreSorted(genericFieldNames[:]) {
		panic("genericFieldNames must be sorted")
	}
	for i, name := range genericFieldNames {
		genericSlot[name], genericFields[name] = i, true
	}
}

// collect records cmd's generic fields, the first of each name (as a
// look-up in the command finds).
func (g *genericArgs) collect(cmd bsoncore.Document) {
	it := value.NewIter(cmd)
	it.Next() // the command's name
	for {
		key, v, ok := it.Next()
		if !ok {
			return
		}
		if i, ok := genericSlot[string(key)]; ok && g[i].Type == 0 {
			g[i] = v
		}
	}
}

// argErr is the command's field name, as cmd.LookupErr finds it; generic
// fields come from the walk made with the request.
func (r *request) argErr(name string) (bsoncore.Value, error) {
	i, ok := genericSlot[name]
	if !ok {
		return r.cmd.LookupErr(name)
	}
	if r.generic[i].Type == 0 {
		return bsoncore.Value{}, bsoncore.ErrElementNotFound
	}
	return r.generic[i], nil
}

// arg is argErr without the error: the zero Value when absent.
func (r *request) arg(name string) bsoncore.Value {
	v, _ := r.argErr(name)
	return v
}
