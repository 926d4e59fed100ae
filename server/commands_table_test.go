package server

import (
	"reflect"
	"testing"
)

// retryableOutsideTransactions are the retryable writes that do not run
// in a transaction here, and why.
var retryableOutsideTransactions = map[string]string{}

// TestCommandTableFacts walks the command table for facts that contradict
// each other: every row says what it does; another spelling names a row
// of the command's own, with its handler and its facts; a retryable write
// is a write that may run in a transaction; a snapshot read is a read
// that may; a command in API version 1 is not a test command but
// mongod's testVersion1.
func TestCommandTableFacts(t *testing.T) {
	for _, c := range commandTable {
		if c.help == "" {
			t.Errorf("%s has no help", c.name)
		}
		if c.canonical != "" {
			checkSpelling(t, c)
		}
		checkRetryableWrite(t, c)
		if c.snapshotRead && (c.family != reads || !c.inTransaction) {
			t.Errorf("%s takes snapshot reads but is not a read that may run in a transaction", c.name)
		}
		if c.apiV1 && c.family == testOnly && c.name != "testVersion1" {
			t.Errorf("%s is a test command in API version 1", c.name)
		}
	}
	for name := range retryableOutsideTransactions {
		if c := commandsByName[name]; c == nil || !c.retryableWrite || c.inTransaction {
			t.Errorf("retryableOutsideTransactions: %s is not a retryable write refused in transactions", name)
		}
	}
}

// checkSpelling checks another spelling of a command against the row of
// the command it names.
func checkSpelling(t *testing.T, c command) {
	t.Helper()
	own := commandsByName[c.canonical]
	switch {
	case own == nil:
		t.Errorf("%s is a spelling of %s, which is no command", c.name, c.canonical)
	case own.canonical != "":
		t.Errorf("%s is a spelling of %s, itself a spelling of %s", c.name, c.canonical, own.canonical)
	case reflect.ValueOf(c.handler).Pointer() != reflect.ValueOf(own.handler).Pointer():
		t.Errorf("%s runs another handler than %s", c.name, c.canonical)
	case c.inTransaction != own.inTransaction || c.retryableWrite != own.retryableWrite ||
		c.snapshotRead != own.snapshotRead || c.need != own.need || c.access != own.access:
		t.Errorf("%s says other things of the command than %s", c.name, c.canonical)
	}
}

// checkRetryableWrite: a retryable write is a write, and it may run in a
// transaction unless retryableOutsideTransactions says why not.
func checkRetryableWrite(t *testing.T, c command) {
	t.Helper()
	if !c.retryableWrite {
		return
	}
	if c.family != writes {
		t.Errorf("%s is a retryable write of the %s family", c.name, c.family)
	}
	if !c.inTransaction && retryableOutsideTransactions[c.name] == "" {
		t.Errorf("%s is a retryable write that may not run in a transaction", c.name)
	}
}
