// Package formatversion owns the format versions of everything DumboDB
// persists, in one table (All), and the check every reader makes before it
// trusts a byte: a version newer than this build writes is refused with a
// message naming it; an older one is upgraded by the steps its owner
// registers, or refused with what upgrades it. docs/format/versions.md
// lists the versions and their steps.
//
// The files with a header (logs, the users file, the retry file) begin
// with an 8-byte magic and the version as a little-endian uint32; a
// database root records its version in a root entry instead, which the
// storage package reads and hands to Check.
package formatversion

import (
	"encoding/binary"
	"fmt"
)

// Format is one persisted format.
type Format struct {
	// Name is what messages call it: "users file".
	Name string
	// Magic is the 8 bytes a file of this format begins with; empty for a
	// format without a header.
	Magic string
	// Current is the version this build writes.
	Current uint32
	// Oldest is the oldest version this build reads.
	Oldest uint32
	// Upgrade says what upgrades data older than Oldest.
	Upgrade string
}

// What upgrades data older than a build reads.
const (
	upgradeLog      = "start the DumboDB that wrote it and shut it down cleanly, which empties the log"
	upgradeDatabase = "mongodump it with the DumboDB that wrote it and mongorestore it into this one"
	upgradeServer   = "start the DumboDB that wrote it once, then this one"
	upgradeBundle   = "restore it with the DumboDB that wrote it and make the bundle again with this one"
)

// The formats, as docs/format/versions.md lists them.
var (
	Root        = &Format{Name: "database root", Current: 2, Oldest: 1, Upgrade: upgradeDatabase}
	WAL         = &Format{Name: "write-ahead log segment", Magic: "DUMBOWAL", Current: 1, Oldest: 1, Upgrade: upgradeLog}
	ChangeLog   = &Format{Name: "change log segment", Magic: "DUMBOCHG", Current: 1, Oldest: 1, Upgrade: upgradeServer}
	DecisionLog = &Format{Name: "transaction decision log", Magic: "DUMBOTXL", Current: 1, Oldest: 1, Upgrade: upgradeLog}
	RetryFile   = &Format{Name: "retry file", Magic: "DUMBORTY", Current: 1, Oldest: 1, Upgrade: upgradeServer}
	Users       = &Format{Name: "users file", Magic: "DUMBOAUT", Current: 1, Oldest: 1, Upgrade: upgradeServer}
	Remotes     = &Format{Name: "remotes file", Magic: "DUMBORMT", Current: 1, Oldest: 1, Upgrade: upgradeServer}
	Dropped     = &Format{Name: "dropped database record", Magic: "DUMBODRP", Current: 1, Oldest: 1, Upgrade: upgradeServer}
	Bundle      = &Format{Name: "history bundle", Magic: "DUMBOBDL", Current: 1, Oldest: 1, Upgrade: upgradeBundle}
	Settings    = &Format{Name: "settings file", Magic: "DUMBOSET", Current: 1, Oldest: 1, Upgrade: upgradeServer}
	// HistoryIndex is derived data: one it does not read is built again.
	HistoryIndex = &Format{Name: "history index", Magic: "DUMBOHIX", Current: 1, Oldest: 1, Upgrade: "nothing: it is built again"}
)

// All is every format, in the order versions.md lists them.
var All = []*Format{Root, WAL, ChangeLog, DecisionLog, RetryFile, Users, Remotes, Dropped, Bundle, Settings, HistoryIndex}

// HeaderSize is the size of the magic and version that begin a file.
const HeaderSize = 12

// Header returns the magic and the current version, to begin a file with.
func (f *Format) Header() [HeaderSize]byte {
	var h [HeaderSize]byte
	copy(h[:], f.Magic)
	binary.LittleEndian.PutUint32(h[8:], f.Current)
	return h
}

// ReadHeader reads the version at the start of data and checks it. It
// returns ErrNoHeader when data is too short or does not begin with the
// magic, and a *VersionError when the version cannot be read.
func (f *Format) ReadHeader(data []byte) (uint32, error) {
	if len(data) < HeaderSize || string(data[:8]) != f.Magic {
		return 0, fmt.Errorf("%w: not a %s", ErrNoHeader, f.Name)
	}
	v := binary.LittleEndian.Uint32(data[8:])
	return v, f.Check(v)
}

// Check reports whether this build reads version v: nil, or a
// *VersionError that is ErrNewer or ErrOlder.
func (f *Format) Check(v uint32) error {
	if v > f.Current || v < f.Oldest {
		return &VersionError{Format: f, Found: v}
	}
	return nil
}

// Steps upgrade a value of one format: Steps[v] turns version v into v+1.
type Steps[T any] map[uint32]func(T) (T, error)

// Upgrade checks version v of f and applies the steps from v up to
// f.Current to x, one version at a time.
func Upgrade[T any](f *Format, v uint32, x T, steps Steps[T]) (T, error) {
	if err := f.Check(v); err != nil {
		return x, err
	}
	for ; v < f.Current; v++ {
		step, ok := steps[v]
		if !ok {
			return x, fmt.Errorf("%s: no upgrade step from version %d", f.Name, v)
		}
		var err error
		if x, err = step(x); err != nil {
			return x, fmt.Errorf("%s: upgrade from version %d: %w", f.Name, v, err)
		}
	}
	return x, nil
}
