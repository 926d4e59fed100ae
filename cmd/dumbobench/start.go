package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dumbodb/dumbodb/bench"
	"github.com/dumbodb/dumbodb/internal/dumboproc"
)

// Names of the targets --start brings up.
const (
	dumboName = "dumbodb"
	peerName  = "ferretdb"
	// wholeDocName is a second DumboDB with the path index off
	// (--largeDocThreshold 0), started for the LargeDoc family only.
	wholeDocName = "dumbodb-wholedoc"
)

// servers are the processes --start brought up, all on 127.0.0.1.
type servers struct {
	targets []bench.Target
	dir     string
	dumbos  []*dumboproc.Proc
	bin     string // the dumbodb binary built from the tree
	copies  []*process
	peerSh  string   // peer.sh, when the peer runs
	cacheMB int      // every DumboDB's --cacheSizeMB, given explicitly
	flags   []string // more flags for every DumboDB (--server-flag)
	logf    func(string, ...any)
}

// startServers builds DumboDB from the tree holding the working directory
// and starts it, with wholeDoc a second DumboDB with the path index off
// that runs only the LargeDoc benchmarks, then FerretDB through peer.sh,
// each on a free loopback port with a fresh data directory. A peer that
// fails to start is reported and skipped: DumboDB alone still gives
// absolute figures.
func startServers(ctx context.Context, peer, wholeDoc bool, cacheMB int, flags []string, logf func(string, ...any)) (*servers, error) {
	repo, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "dumbobench-")
	if err != nil {
		return nil, fmt.Errorf("temp directory: %w", err)
	}
	s := &servers{dir: dir, cacheMB: cacheMB, flags: flags, logf: logf}
	s.logf("building ./cmd/dumbodb ...")
	if s.bin, err = dumboproc.Build(ctx, repo, dir); err != nil {
		s.stop()
		return nil, err
	}
	t, err := s.startDumbo(ctx, s.bin, dumboName)
	if err != nil {
		s.stop()
		return nil, err
	}
	s.targets = append(s.targets, t)
	if wholeDoc {
		t, err := s.startDumbo(ctx, s.bin, wholeDocName, "--largeDocThreshold", "0")
		if err != nil {
			s.stop()
			return nil, err
		}
		t.Only = "^LargeDoc/"
		s.targets = append(s.targets, t)
	}
	if peer {
		if t, err := s.startPeer(ctx, repo); err != nil {
			logf("FerretDB not started, measuring DumboDB alone: %v", err)
		} else {
			s.targets = append(s.targets, t)
		}
	}
	return s, nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("--start must run inside the DumboDB tree")
	}
	return filepath.Dir(gomod), nil
}

// startDumbo starts bin as target name, with its data in <dir>/<name>-data
// and its log in <dir>/<name>.log.
func (s *servers) startDumbo(ctx context.Context, bin, name string, args ...string) (bench.Target, error) {
	log, err := os.Create(filepath.Join(s.dir, name+".log"))
	if err != nil {
		return bench.Target{}, fmt.Errorf("%s log: %w", name, err)
	}
	defer log.Close()
	data := filepath.Join(s.dir, name+"-data")
	// The budget is passed, not left to the server's default, so that the
	// memory goal knows it for certain.
	// An HTTP listener, for the Remote family's clones and pushes over HTTP.
	httpPort, err := dumboproc.FreePort()
	if err != nil {
		return bench.Target{}, err
	}
	args = append(append([]string{"--cacheSizeMB", strconv.Itoa(s.cacheMB),
		"--httpAddress", fmt.Sprintf("127.0.0.1:%d", httpPort)}, s.flags...), args...)
	p, err := dumboproc.Start(ctx, bin, data, log, args...)
	if err != nil {
		return bench.Target{}, fmt.Errorf("%s (log %s): %w", name, log.Name(), err)
	}
	s.dumbos = append(s.dumbos, p)
	s.logf("%s listening on %s %s", name, p.Addr(), strings.Join(args, " "))
	return bench.Target{Name: name, URL: p.URL(), DataDir: data, Pid: p.Pid(), CacheSizeMB: s.cacheMB}, nil
}

// startOn starts one more DumboDB of the build, with the flags of those
// above, on dataDir, and returns without waiting for it to answer: the
// Scale family's restarts time that themselves, on a copy of a target's
// data directory.
func (s *servers) startOn(dataDir string) (bench.StartedServer, error) {
	port, err := dumboproc.FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--data-dir", dataDir, "--port", strconv.Itoa(port), "--cacheSizeMB", strconv.Itoa(s.cacheMB)}, s.flags...)
	p := &process{cmd: exec.Command(s.bin, args...), addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dumbodb: %w", err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	s.copies = append(s.copies, p)
	return p, nil
}

// process is a server startOn started (bench.StartedServer).
type process struct {
	cmd  *exec.Cmd
	addr string
	out  dumboproc.SyncBuffer
	done chan struct{} // closed when the process has exited
}

func (p *process) Addr() string            { return p.addr }
func (p *process) Exited() <-chan struct{} { return p.done }
func (p *process) Output() string          { return p.out.String() }

// Stop sends sig and waits for the process to end; one still running
// after dumboproc.StopTimeout is killed and reported.
func (p *process) Stop(sig os.Signal) error {
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(dumboproc.StopTimeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("dumbodb on %s did not stop on %v within %s; killed", p.addr, sig, dumboproc.StopTimeout)
	}
}

// startPeer starts FerretDB through peer.sh, which prints its pid on
// stdout once it listens.
func (s *servers) startPeer(ctx context.Context, repo string) (bench.Target, error) {
	sh, err := peerScript(repo)
	if err != nil {
		return bench.Target{}, err
	}
	port, err := dumboproc.FreePort()
	if err != nil {
		return bench.Target{}, err
	}
	s.logf("starting FerretDB through %s (the first build takes minutes) ...", sh)
	var stderr bytes.Buffer
	start := exec.CommandContext(ctx, "bash", sh, "start", fmt.Sprint(port), s.peerData())
	start.Stderr = &stderr
	out, err := start.Output()
	if err != nil {
		return bench.Target{}, fmt.Errorf("peer.sh start: %v\n%s%s", err, out, &stderr)
	}
	s.peerSh = sh
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		s.logf("ferretdb's pid unknown (peer.sh printed %q): no server CPU figures for it", out)
	}
	s.logf("ferretdb listening on %s, pid %d", addr, pid)
	return bench.Target{Name: peerName, URL: "mongodb://" + addr + "/?directConnection=true", Pid: pid}, nil
}

// peerScript finds ../shared/tools/peer.sh beside the tree, or beside the
// main tree when this one is a git worktree placed elsewhere.
func peerScript(repo string) (string, error) {
	trees := []string{repo}
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir")
	cmd.Dir = repo
	if out, err := cmd.Output(); err == nil {
		trees = append(trees, filepath.Dir(strings.TrimSpace(string(out))))
	}
	for _, tree := range trees {
		sh := filepath.Join(tree, "..", "shared", "tools", "peer.sh")
		if _, err := os.Stat(sh); err == nil {
			return sh, nil
		}
	}
	return "", fmt.Errorf("peer script: no ../shared/tools/peer.sh beside %s", strings.Join(trees, " or "))
}

func (s *servers) peerData() string { return filepath.Join(s.dir, "ferretdb-data") }

// stop stops what was started and removes the temporary directory.
func (s *servers) stop() {
	if s.peerSh != "" {
		if out, err := exec.Command("bash", s.peerSh, "stop", s.peerData()).CombinedOutput(); err != nil {
			s.logf("peer.sh stop: %v\n%s", err, out)
		}
	}
	for _, p := range s.dumbos {
		if _, err := p.Stop(syscall.SIGTERM); err != nil {
			s.logf("%v", err)
		}
	}
	// The Scale family stops its own; these are left by an interruption.
	for _, p := range s.copies {
		p.Stop(syscall.SIGKILL)
	}
	os.RemoveAll(s.dir)
}
