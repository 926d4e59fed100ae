package server

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
	"github.com/dumbodb/dumbodb/storage"
)

// parseMergeMode reads a collection's mergeMode option (create, collMod):
// how its documents merge (storage.MergeModes).
func parseMergeMode(cmd string, v bsoncore.Value) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", typeMismatch(cmd, "mergeMode", v, "string")
	}
	if !slices.Contains(storage.MergeModes, s) {
		return "", mongoerr.New(mongoerr.BadValue, "%s.mergeMode must be one of %s, not %q", cmd, strings.Join(storage.MergeModes, ", "), s)
	}
	return s, nil
}
