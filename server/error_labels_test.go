package server

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/mongoerr"
)

// TestErrorLabelsFollowCategories: the labels a fail point's errors get
// come from mongod's error categories, as mongod's error_labels.cpp
// decides them, not from a list of numbers.
func TestErrorLabelsFollowCategories(t *testing.T) {
	for _, c := range []struct {
		code                 mongoerr.Code
		retriable, resumable bool
	}{
		{mongoerr.HostUnreachable, true, true},
		{mongoerr.ReadConcernMajorityNotAvailableYet, true, true},
		{mongoerr.NotWritablePrimary, true, true},
		{mongoerr.StaleEpoch, false, true},
		{mongoerr.StaleConfig, false, true},
		{mongoerr.RetryChangeStream, false, true},
		{mongoerr.FailedToSatisfyReadPreference, false, true},
		{63, false, false}, // StaleShardVersion, obsolete since 6.1
		{mongoerr.CursorNotFound, false, false},
		{mongoerr.ChangeStreamHistoryLost, false, false},
	} {
		if got := errorCode(bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(c.code))}).In(mongoerr.RetriableError); got != c.retriable {
			t.Errorf("%d: RetryableWriteError %v, want %v", c.code, got, c.retriable)
		}
		if got := resumableStreamError(c.code); got != c.resumable {
			t.Errorf("%d: ResumableChangeStreamError %v, want %v", c.code, got, c.resumable)
		}
	}
	if errorCode(bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, 1<<32+6)}) != 0 {
		t.Error("a code past int32 taken for HostUnreachable")
	}
	err := labelStreamError(mongoerr.New(mongoerr.ChangeStreamFatalError, "x"))
	if info := mongoerr.As(err).Info; info == nil || info.Lookup("errorLabels", "0").StringValue() != "NonResumableChangeStreamError" {
		t.Errorf("ChangeStreamFatalError labelled %v", info)
	}
}
