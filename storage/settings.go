package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"
)

// The settings file (docs/format/settings.md) keeps the server-wide
// settings that commands change and a restart keeps: one BSON document of
// settings by name, behind a header and a CRC, replaced whole at each
// change.

const settingsFileName = "settings"

// errBadSettingsFile is a settings file whose header, length or CRC is
// wrong.
var errBadSettingsFile = errors.New("damaged settings file")

// settingsFile is the file's contents, in memory.
type settingsFile struct {
	mu   sync.Mutex
	path string
	doc  bsoncore.Document
}

func openSettings(dir string) (*settingsFile, error) {
	s := &settingsFile{path: filepath.Join(dir, settingsFileName), doc: bsoncore.NewDocumentBuilder().Build()}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := formatversion.Settings.ReadHeader(data); err != nil {
		if errors.Is(err, formatversion.ErrNoHeader) {
			err = errBadSettingsFile
		}
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	if len(data) < 20 || int(binary.LittleEndian.Uint32(data[16:])) != len(data)-20 ||
		crc32.Checksum(data[20:], crcTable) != binary.LittleEndian.Uint32(data[12:]) {
		return nil, fmt.Errorf("%w %s", errBadSettingsFile, s.path)
	}
	doc := bsoncore.Document(data[20:])
	if err := doc.Validate(); err != nil {
		return nil, fmt.Errorf("%w %s: %v", errBadSettingsFile, s.path, err)
	}
	s.doc = doc
	return s, nil
}

func encodeSettings(body bsoncore.Document) []byte {
	out := make([]byte, 20, 20+len(body))
	h := formatversion.Settings.Header()
	copy(out, h[:])
	binary.LittleEndian.PutUint32(out[12:], crc32.Checksum(body, crcTable))
	binary.LittleEndian.PutUint32(out[16:], uint32(len(body)))
	return append(out, body...)
}

// Setting is a server-wide setting's value; ok is false when it is not set.
func (e *Engine) Setting(name string) (v bsoncore.Value, ok bool) {
	e.settings.mu.Lock()
	defer e.settings.mu.Unlock()
	v, err := e.settings.doc.LookupErr(name)
	return v, err == nil
}

// SetSetting sets a server-wide setting durably (unsets it when v is the
// zero Value), waiting while the data directory is frozen.
func (e *Engine) SetSetting(ctx context.Context, name string, v bsoncore.Value) error {
	_, leave, err := e.gate.enter(ctx)
	if err != nil {
		return err
	}
	defer leave()
	s := e.settings
	s.mu.Lock()
	defer s.mu.Unlock()
	b := bsoncore.NewDocumentBuilder()
	els, _ := s.doc.Elements()
	for _, el := range els {
		if el.Key() != name {
			b.AppendValue(el.Key(), el.Value())
		}
	}
	if v.Type != 0 {
		b.AppendValue(name, v)
	}
	doc := b.Build()
	if err := durablefile.Replace(s.path, encodeSettings(doc), 0o600); err != nil {
		return fmt.Errorf("save the settings file: %w", diskFull(err))
	}
	s.doc = doc
	return nil
}

// EnterWriteGate lets a change to a file of the data directory that
// another package writes (the users file) in, waiting while the directory
// is frozen; the function it returns lets the change out.
func (e *Engine) EnterWriteGate(ctx context.Context) (func(), error) {
	_, leave, err := e.gate.enter(ctx)
	return leave, err
}
