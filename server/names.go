package server

import (
	"strings"
	"unicode/utf8"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// maxDBNameLength is mongod's limit on database names, in bytes.
const maxDBNameLength = 63

// maxNamespaceLength is mongod's limit on "db.collection".
const maxNamespaceLength = 255

// validateDBName applies mongod 8's database name rules on Linux as it
// reads $db: at most maxDBNameLength bytes, none of /\. " or NUL. A '$'
// passes here, as on mongod, and only creating a collection refuses it
// (validateCreatableDB): such a database reads as empty. Control and zero-width
// characters pass, as on mongod, and so do the *<>:|? that only mongod on
// Windows refuses. The '.', NUL and length checks come first, with their
// own messages, because mongod makes them as it reads $db, before it looks
// at the command. One rule is DumboDB's own: the name must be UTF-8,
// because it names a directory and comes back in replies (listDatabases)
// that drivers and shells decode as UTF-8; a name they cannot decode could
// be created but never named again.
func validateDBName(db string) error {
	switch {
	case db == "":
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: ''")
	case strings.ContainsRune(db, '.'):
		return mongoerr.New(mongoerr.InvalidNamespace, "'.' is an invalid character in a db name: %s", db)
	case strings.ContainsRune(db, 0):
		return mongoerr.New(mongoerr.InvalidNamespace, "database names cannot have embedded null characters")
	case len(db) > maxDBNameLength:
		return mongoerr.New(mongoerr.InvalidNamespace, "db name must be at most %d characters, found: %d", maxDBNameLength, len(db))
	case strings.ContainsAny(db, "/\\ \""):
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	case !utf8.ValidString(db):
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: %q is not valid UTF-8", db)
	}
	return nil
}

// validateCreatableDB refuses to create collection coll in db when db
// holds a '$', in mongod's words: mongod accepts such a name in $db but
// creates nothing in it (userAllowedCreateNS). coll "" stands for a whole
// database made at once (a clone, an undrop), which mongod has not.
func validateCreatableDB(db, coll string) error {
	switch {
	case !strings.ContainsRune(db, '$'):
		return nil
	case coll == "":
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid database name: '%s'", db)
	}
	return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace: %s.%s", db, coll)
}

// validateCollectionName applies mongod's collection name rules, the
// checks it makes as it reads a namespace (a leading '.', NUL) first.
func validateCollectionName(db, coll string) error {
	switch {
	case coll == "":
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", db)
	case coll[0] == '.':
		return mongoerr.New(mongoerr.InvalidNamespace, "Collection names cannot start with '.': %s", coll)
	case strings.ContainsRune(coll, 0):
		return mongoerr.New(mongoerr.InvalidNamespace, "namespaces cannot have embedded null characters")
	case strings.Contains(coll, "$"):
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid collection name: %s", coll)
	case len(db)+1+len(coll) > maxNamespaceLength:
		return mongoerr.New(mongoerr.InvalidNamespace, "Fully qualified namespace is too long. Namespace: %s.%s Max: %d", db, coll, maxNamespaceLength)
	}
	return nil
}

// validateUserWritable refuses writes to system collections that users may
// not write directly.
func validateUserWritable(db, coll string) error {
	if strings.HasPrefix(coll, "system.") {
		return mongoerr.New(mongoerr.InvalidNamespace, "cannot write to '%s.%s'", db, coll)
	}
	return nil
}

// splitNamespace splits "db.coll" at the first dot.
func splitNamespace(ns string) (db, coll string, ok bool) {
	i := strings.IndexByte(ns, '.')
	if i <= 0 || i == len(ns)-1 {
		return "", "", false
	}
	return ns[:i], ns[i+1:], true
}
