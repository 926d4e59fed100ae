package storage

import (
	"errors"
	"testing"
)

// TestRetryManifestLock: a manifest update that failed only for its lock
// is tried again, a few times; any other error is returned at once.
func TestRetryManifestLock(t *testing.T) {
	timeout := errors.New(manifestLockTimeout)
	calls := 0
	if err := retryManifestLock(func() error {
		if calls++; calls < 3 {
			return timeout
		}
		return nil
	}); err != nil || calls != 3 {
		t.Errorf("two timeouts then success: %v after %d calls", err, calls)
	}
	calls = 0
	other := errors.New("disk full")
	if err := retryManifestLock(func() error { calls++; return other }); err != other || calls != 1 {
		t.Errorf("another error: %v after %d calls", err, calls)
	}
	calls = 0
	if err := retryManifestLock(func() error { calls++; return timeout }); err != timeout || calls != chunkStoreLockAttempts {
		t.Errorf("always timing out: %v after %d calls", err, calls)
	}
}
