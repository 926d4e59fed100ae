package dumboproc

import (
	"context"
	"os"
	"sync"

	"github.com/dumbodb/dumbodb/internal/logschema"
)

// TB is the part of testing.TB that the T helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// The binary Binary builds, once per test binary.
var (
	inMain   bool
	buildDir string
	build    struct {
		once sync.Once
		bin  string
		err  error
	}
)

// Main runs a test package's tests (m is its *testing.M) and exits with
// their status, after removing the binary Binary built, if any.
func Main(m interface{ Run() int }) {
	inMain = true
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// Binary returns the dumbodb binary built from the module holding the
// current directory. The first call builds it (about a minute with a cold
// build cache), so a test that times the server's start-up calls Binary
// before it starts the clock.
func Binary(t TB) string {
	t.Helper()
	if !inMain {
		t.Fatalf("dumboproc: the test package's TestMain must call dumboproc.Main, which removes the built binary")
	}
	build.once.Do(func() {
		if buildDir, build.err = os.MkdirTemp("", "dumboproc-"); build.err == nil {
			build.bin, build.err = Build(context.Background(), "", buildDir)
		}
	})
	if build.err != nil {
		t.Fatalf("%v", build.err)
	}
	return build.bin
}

// StartT starts Binary like Start, with its output kept for Output only,
// fails t if it does not answer, and kills it when t ends, then checks its
// log against mongod's schema (internal/logschema).
func StartT(t TB, dataDir string, args ...string) *Proc {
	t.Helper()
	p, err := Start(context.Background(), Binary(t), dataDir, nil, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { p.Kill(); logschema.CheckT(t, "dumbodb on "+p.Addr()+": its log", p.Output()) })
	return p
}

// StopT is Stop failing t when the process does not stop.
func (p *Proc) StopT(t TB, sig os.Signal) int {
	t.Helper()
	code, err := p.Stop(sig)
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Output())
	}
	return code
}
