// Package dumboproc builds the dumbodb binary and runs it as a separate
// process: on a free loopback port, with a data directory and extra flags,
// ready once it answers `dumbodb ping`, stopped with a signal or kill -9.
// It is the one way the process tests (cmd/dumbodb, its crashtest),
// dumbobench --start and dumbospec (make spec) bring up a real server.
//
// Build, Start and Proc's methods return errors, for commands. Tests use the
// T variants, which fail the test instead and are built on Binary: one build
// per test binary, into a temporary directory that Main removes, so a test
// package that starts servers has
//
//	func TestMain(m *testing.M) { dumboproc.Main(m) }
//
// The package does not import testing (TB is the part of testing.TB it
// uses), so that commands using it do not link the test framework.
package dumboproc

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

const (
	// StartTimeout is how long Start waits for the server to answer: a
	// server opening a large data directory on a loaded machine is slow.
	StartTimeout = 60 * time.Second
	// StopTimeout is how long Stop waits for the process to exit before it
	// kills it.
	StopTimeout = 30 * time.Second
)

// Build compiles dumbodb from the module at repo ("" for the current
// directory, which must lie inside the module) into dir and returns the
// binary's path.
func Build(ctx context.Context, repo, dir string) (string, error) {
	bin := filepath.Join(dir, "dumbodb")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/dumbodb/dumbodb/cmd/dumbodb")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build dumbodb: %v\n%s", err, out)
	}
	return bin, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Proc is a running (or exited) dumbodb process.
type Proc struct {
	bin    string
	port   int
	cmd    *exec.Cmd
	output SyncBuffer
	done   chan struct{} // closed when the process has exited
	// pingTLS are the TLS flags `dumbodb ping` needs to reach the server.
	pingTLS []string
}

// Start runs bin with --data-dir dataDir, --port on a free port and args,
// and returns once the server answers a ping. Its stdout and stderr go to
// out or, when out is nil, are kept for Output.
func Start(ctx context.Context, bin, dataDir string, out io.Writer, args ...string) (*Proc, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p := &Proc{bin: bin, port: port, done: make(chan struct{})}
	if slices.Contains(args, "requireTLS") {
		p.pingTLS = []string{"--tls"} // a server that requires TLS answers only that
	}
	p.cmd = exec.Command(bin, append([]string{"--data-dir", dataDir, "--port", strconv.Itoa(port)}, args...)...)
	if out == nil {
		out = &p.output
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dumbodb: %w", err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	if err := p.waitAnswering(ctx); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%w\n%s", err, p.Output())
	}
	return p, nil
}

// waitAnswering polls with `dumbodb ping`, the check the Docker healthcheck
// makes: a listening socket alone does not mean the server serves.
func (p *Proc) waitAnswering(ctx context.Context) error {
	deadline := time.Now().Add(StartTimeout)
	for {
		ping := exec.CommandContext(ctx, p.bin, append([]string{"ping", "--port", strconv.Itoa(p.port), "--timeout", "1s"}, p.pingTLS...)...)
		if ping.Run() == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("dumbodb exited before answering (exit code %d)", p.cmd.ProcessState.ExitCode())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dumbodb did not answer on %s within %s", p.Addr(), StartTimeout)
		}
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Port is the TCP port the server listens on.
func (p *Proc) Port() int { return p.port }

// Addr is the server's host:port.
func (p *Proc) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)) }

// URL is a connection string for this one server.
func (p *Proc) URL() string { return "mongodb://" + p.Addr() + "/?directConnection=true" }

// Output is what the process has written to stdout and stderr so far, when
// Start was given no writer for them.
func (p *Proc) Output() string { return p.output.String() }

// Stop sends sig and returns the exit code (-1 when a signal ended the
// process, as with SIGKILL). A process still running after StopTimeout is
// killed and reported as an error.
func (p *Proc) Stop(sig os.Signal) (int, error) {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(StopTimeout):
		p.Kill()
		return -1, fmt.Errorf("dumbodb did not stop on %v within %s; killed", sig, StopTimeout)
	}
}

// Kill ends the process with SIGKILL, if it still runs, and waits for it.
func (p *Proc) Kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// SyncBuffer is a bytes.Buffer that one goroutine may write while
// another reads it: a process's output, a server's log in a test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
