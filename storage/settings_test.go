package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/internal/formatversion"
	"github.com/rs/zerolog"
)

func docValue(d bsoncore.Document) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

func TestSettingsOutliveARestart(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	if _, ok := e.Setting("a"); ok {
		t.Fatal("a setting in a new data directory")
	}
	a := bsoncore.NewDocumentBuilder().AppendInt32("x", 1).Build()
	b := bsoncore.NewDocumentBuilder().AppendString("y", "two").Build()
	for name, v := range map[string]bsoncore.Document{"a": a, "b": b} {
		if err := e.SetSetting(ctx, name, docValue(v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.SetSetting(ctx, "b", bsoncore.Value{}); err != nil { // unset
		t.Fatal(err)
	}
	e.Close()
	e = openEngine(t, dir, Options{})
	defer e.Close()
	if v, ok := e.Setting("a"); !ok || !v.Equal(docValue(a)) {
		t.Fatalf("a after a restart: %v %v", v, ok)
	}
	if _, ok := e.Setting("b"); ok {
		t.Fatal("an unset setting came back")
	}
}

func TestSettingsFileChecks(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir, Options{})
	if err := e.SetSetting(ctx, "a", docValue(bsoncore.NewDocumentBuilder().AppendInt32("x", 1).Build())); err != nil {
		t.Fatal(err)
	}
	e.Close()
	path := filepath.Join(dir, settingsFileName)
	good, _ := os.ReadFile(path)

	damaged := append([]byte(nil), good...)
	damaged[len(damaged)-3] ^= 0xff
	os.WriteFile(path, damaged, 0o600)
	if _, err := Open(dir, Options{}, zerolog.Nop()); !errors.Is(err, errBadSettingsFile) {
		t.Fatalf("a damaged settings file: %v", err)
	}
	newer := append([]byte(nil), good...)
	newer[8] = byte(formatversion.Settings.Current + 1)
	os.WriteFile(path, newer, 0o600)
	if _, err := Open(dir, Options{}, zerolog.Nop()); !errors.Is(err, formatversion.ErrNewer) {
		t.Fatalf("a newer settings file: %v", err)
	}
}

func TestASettingWaitsWhileFrozen(t *testing.T) {
	e := openEngine(t, t.TempDir(), Options{})
	defer e.Close()
	if _, err := e.Freeze(ctx); err != nil {
		t.Fatal(err)
	}
	set := make(chan error, 1)
	go func() { set <- e.SetSetting(ctx, "a", docValue(bsoncore.NewDocumentBuilder().Build())) }()
	time.Sleep(50 * time.Millisecond)
	if _, ok := e.Setting("a"); ok {
		t.Fatal("a setting changed while frozen")
	}
	e.Thaw()
	if err := <-set; err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Setting("a"); !ok {
		t.Fatal("the setting was not made after the thaw")
	}
}
