package formatversion

import (
	"errors"
	"fmt"
)

var (
	// ErrNewer is a version newer than this build writes.
	ErrNewer = errors.New("written by a newer DumboDB")
	// ErrOlder is a version older than this build reads.
	ErrOlder = errors.New("written by an older DumboDB")
	// ErrNoHeader is a file that does not begin with its format's magic.
	ErrNoHeader = errors.New("no format header")
)

// VersionError is a version this build cannot read.
type VersionError struct {
	Format *Format
	Found  uint32
}

func (e *VersionError) Error() string {
	f := e.Format
	if e.Found > f.Current {
		return fmt.Sprintf("%s is format version %d, newer than the newest this DumboDB reads (%d): open it with the DumboDB that wrote it or a later one",
			f.Name, e.Found, f.Current)
	}
	return fmt.Sprintf("%s is format version %d, older than the oldest this DumboDB reads (%d): %s",
		f.Name, e.Found, f.Oldest, f.Upgrade)
}

// Is makes a VersionError ErrNewer or ErrOlder.
func (e *VersionError) Is(target error) bool {
	if e.Found > e.Format.Current {
		return target == ErrNewer
	}
	return target == ErrOlder
}
