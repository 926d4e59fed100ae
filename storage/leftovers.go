package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
)

// What a failed Dolt write leaves in a database directory (store/nbs):
// the temporary file of the table or manifest it was writing, which Dolt
// removes only on success, and after a failed GC the new table file whose
// manifest update failed. Only a later successful GC would delete them, and
// on a nearly full disk that may be never.
const (
	doltTableTempPrefix    = "nbs_table_"
	doltManifestTempPrefix = "nbs_manifest_"
	// doltJournalName is nbs's chunkJournalName: it looks like a table file
	// but is in use for as long as it exists.
	doltJournalName = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
)

// removeFailedTemp deletes the temporary file a failed Dolt write names in
// err, if any: the write that made it failed, so nobody else uses it.
func (d *Database) removeFailedTemp(err error) {
	var pathErr *fs.PathError
	var linkErr *os.LinkError
	var path string
	switch {
	case errors.As(err, &linkErr): // the rename into place failed
		path = linkErr.Old
	case errors.As(err, &pathErr):
		path = pathErr.Path
	}
	name := filepath.Base(path)
	if filepath.Dir(path) == filepath.Clean(d.dir) &&
		(strings.HasPrefix(name, doltTableTempPrefix) || strings.HasPrefix(name, doltManifestTempPrefix)) {
		d.removeLeftover(name)
	}
}

// removeGCLeftovers deletes the table files, and their temporary files, that
// a failed GC made: those not in before (the directory when it started)
// that the manifest does not name. Nothing else makes such files meanwhile:
// writers are stopped, and Dolt writes chunks to its journal outside GC.
func (d *Database) removeGCLeftovers(before map[string]bool) {
	named, err := d.manifestTables()
	if err != nil {
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("cannot tell what a failed GC left behind")
		return
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Msg("cannot tell what a failed GC left behind")
		return
	}
	for _, e := range entries {
		name := e.Name()
		if before[name] || named[strings.TrimSuffix(name, nbs.ArchiveFileSuffix)] || name == doltJournalName {
			continue
		}
		if strings.HasPrefix(name, doltTableTempPrefix) || isTableFileName(name) {
			d.removeLeftover(name)
		}
	}
}

// dirNames lists the database directory.
func (d *Database) dirNames() (map[string]bool, error) {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names, nil
}

// manifestTables are the table files the manifest on disk names: they must
// stay even where the store's memory lags behind it.
func (d *Database) manifestTables() (map[string]bool, error) {
	f, err := os.Open(filepath.Join(d.dir, "manifest"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := nbs.ParseManifest(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", f.Name(), err)
	}
	named := map[string]bool{}
	for i := range m.NumTableSpecs() {
		named[m.GetTableSpecInfo(i).GetName()] = true
	}
	for i := range m.NumAppendixSpecs() {
		named[m.GetAppendixTableSpecInfo(i).GetName()] = true
	}
	return named, nil
}

// isTableFileName reports whether name is a table file's: an address,
// maybe with the archive suffix.
func isTableFileName(name string) bool {
	_, ok := hash.MaybeParse(strings.TrimSuffix(name, nbs.ArchiveFileSuffix))
	return ok
}

func (d *Database) removeLeftover(name string) {
	err := os.Remove(filepath.Join(d.dir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Str("file", name).Msg("cannot remove what a failed write left behind")
		return
	}
	d.log.Info().Str("c", "STORAGE").Str("db", d.name).Str("file", name).Msg("removed what a failed write left behind")
}
