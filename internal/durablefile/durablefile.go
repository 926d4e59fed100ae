// Package durablefile replaces small files durably: the users file and a
// database's retry file are rewritten whole, and a crash must leave either
// the old contents or the new, never a mix. It also syncs directories whose
// entries must survive a crash (a new database's name).
package durablefile

import (
	"os"
	"path/filepath"
)

// Replace writes data to path.tmp, syncs it, renames it over path and
// syncs the directory, so that the rename itself survives a crash. On
// failure the temporary file is removed and path is unchanged.
func Replace(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir syncs a directory: the entries created, renamed or removed in it
// are durable once it returns.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
