package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

const (
	driverModule = "go.mongodb.org/mongo-driver"
	runnerPkg    = driverModule + "/mongo/integration/unified"
	// patchedLine is what patchRunner adds to the errors the runner
	// ignores when it ends all sessions before the tests.
	patchedLine = "\t\t59, // CommandNotFound: dumbospec's patch, for servers without killAllSessions\n"
)

// runner is a built unified runner: dir holds the test binary and driver/,
// the patched copy of the driver module it was built from. The runner must
// run in its package folder there: it reads the tests from
// ../../../testdata.
type runner struct{ dir string }

func (r runner) binary() string { return filepath.Join(r.dir, "unified.test") }
func (r runner) pkgDir() string {
	return filepath.Join(r.dir, "driver", "mongo", "integration", "unified")
}
func (r runner) testdata() string { return filepath.Join(r.dir, "driver", "testdata") }

// buildRunner returns the runner of the driver that tools/go.mod pins,
// building it into cache the first time. The runner's folder is named by
// a hash of the pin and the patch, so that a new pin builds anew.
func buildRunner(ctx context.Context, tools, cache string, progress io.Writer) (runner, error) {
	key, err := pinKey(tools)
	if err != nil {
		return runner{}, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return runner{}, err
	}
	cache, err = filepath.Abs(cache)
	if err != nil {
		return runner{}, err
	}
	r := runner{dir: filepath.Join(cache, "runner-"+key)}
	if _, err := os.Stat(r.binary()); err == nil {
		return r, nil
	}
	fmt.Fprintf(progress, "building the unified runner pinned by %s into %s (once, a few minutes) ...\n",
		filepath.Join(tools, "go.mod"), r.dir)
	tmp, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		return runner{}, err
	}
	if err := build(ctx, tools, tmp); err != nil {
		os.RemoveAll(tmp)
		return runner{}, err
	}
	// A concurrent run may have finished the same build first; its copy
	// serves as well.
	if err := os.Rename(tmp, r.dir); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(r.binary()); statErr != nil {
			return runner{}, err
		}
	}
	return r, nil
}

func pinKey(tools string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(tools, name))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	h.Write([]byte(patchedLine))
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// build makes the runner in dir. The module cache is read-only, so the
// driver is copied to be patched, and a copy of tools/go.mod replaces the
// driver with that copy: -modfile leaves tools/go.mod as it is.
func build(ctx context.Context, tools, dir string) error {
	src, err := moduleDir(ctx, tools)
	if err != nil {
		return err
	}
	driver := filepath.Join(dir, "driver")
	if err := os.CopyFS(driver, os.DirFS(src)); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := patchRunner(driver); err != nil {
		return err
	}
	modfile := filepath.Join(dir, "runner.mod")
	if err := copyFile(filepath.Join(tools, "go.mod"), modfile); err != nil {
		return err
	}
	if err := copyFile(filepath.Join(tools, "go.sum"), filepath.Join(dir, "runner.sum")); err != nil {
		return err
	}
	if _, err := goCmd(ctx, tools, "mod", "edit", "-replace="+driverModule+"="+driver, modfile); err != nil {
		return err
	}
	_, err = goCmd(ctx, tools, "test", "-c", "-mod=mod", "-modfile="+modfile, "-o", filepath.Join(dir, "unified.test"), runnerPkg)
	return err
}

// moduleDir downloads the driver at the version tools/go.mod requires and
// returns its folder in the module cache.
func moduleDir(ctx context.Context, tools string) (string, error) {
	out, err := goCmd(ctx, tools, "mod", "download", "-json", driverModule)
	if err != nil {
		return "", err
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %v %s", driverModule, err, m.Error)
	}
	return m.Dir, nil
}

// killAllSessionsIgnored is the line of admin_helpers.go after which
// patchRunner adds patchedLine.
var killAllSessionsIgnored = regexp.MustCompile(`(?m)^\t\t13, .*// Unauthorized.*\n`)

// patchRunner makes the runner go on when the server does not know
// killAllSessions, as DumboDB does not: the runner ends all sessions
// before the tests and stops the whole run on any error but those it
// lists (Unauthorized, for Atlas, among them). It is the one patch.
func patchRunner(driver string) error {
	file := filepath.Join(driver, "mongo", "integration", "unified", "admin_helpers.go")
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	loc := killAllSessionsIgnored.FindIndex(src)
	if loc == nil {
		return fmt.Errorf("patch: %s no longer lists Unauthorized (13) among the ignored killAllSessions errors", file)
	}
	patched := append(append(bytes.Clone(src[:loc[1]]), patchedLine...), src[loc[1]:]...)
	return os.WriteFile(file, patched, 0o644)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// passDirectories is the runner's own list of the spec folders it runs.
var (
	passDirectories = regexp.MustCompile(`(?s)passDirectories = \[\]string\{(.*?)\}`)
	quoted          = regexp.MustCompile(`"([^"]+)"`)
)

// folders lists the spec folders the runner runs that match re.
func (r runner) folders(re *regexp.Regexp) ([]string, error) {
	file := filepath.Join(r.pkgDir(), "unified_spec_test.go")
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	list := passDirectories.FindSubmatch(src)
	if list == nil {
		return nil, fmt.Errorf("%s has no passDirectories list", file)
	}
	var all, matched []string
	for _, q := range quoted.FindAllSubmatch(list[1], -1) {
		all = append(all, string(q[1]))
		if re.Match(q[1]) {
			matched = append(matched, string(q[1]))
		}
	}
	if len(matched) == 0 {
		return nil, fmt.Errorf("no spec folder matches -run %q; the folders: %s", re, strings.Join(all, " "))
	}
	return matched, nil
}

// runFolder runs the cases of one spec folder, its log in logs, within
// timeout and what is left of the whole run, and counts them.
func runFolder(r runner, folder, url, logs string, timeout, left time.Duration) (counts, error) {
	if left <= 0 {
		return countFolder(r.testdata(), folder, nil, "")
	}
	timeout = min(timeout, left)
	log := filepath.Join(logs, strings.ReplaceAll(folder, "/", "_")+".log")
	status, err := runOnce(r, folder, url, log, timeout)
	for try := 1; try <= startRetries && err == nil && len(status) == 0 && startRace(log); try++ {
		// The runner's set-up reads the kind of a topology whose monitor may
		// not have heard from the server yet (a race in the driver's test
		// harness, before any case): that is no result, so run it again.
		// A loaded machine lost the race twice in a row once (2026-12-02).
		time.Sleep(time.Duration(try) * time.Second)
		status, err = runOnce(r, folder, url, log, timeout)
	}
	if err != nil {
		return counts{}, err
	}
	return countFolder(r.testdata(), folder, status, log)
}

// startRetries is how many times a folder runs again after the runner
// lost the start race.
const startRetries = 3

// startRace reports whether the runner died in set-up on the topology race.
func startRace(log string) bool {
	b, err := os.ReadFile(log)
	return err == nil && strings.Contains(string(b), "could not detect topology kind")
}

// runOnce runs the runner on one folder, its output in log, and returns
// each case's result.
func runOnce(r runner, folder, url, log string, timeout time.Duration) (map[string]string, error) {
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	// -test.timeout makes the runner print the cases it was running; the
	// context kills it if even that hangs.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.binary(), "-test.run", runPattern(folder), "-test.v", "-test.count=1",
		"-test.timeout", timeout.String())
	cmd.Dir = r.pkgDir()
	cmd.Env = append(os.Environ(), "MONGODB_URI="+url)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Run() // failing cases make it exit 1: the log tells what ran
	f.Close()
	return parseLog(log, folder)
}

// runPattern selects the cases of folder alone: every element of the
// name is anchored, and the level below the folder must be a file, so that
// command-monitoring does not also run command-monitoring/logging.
func runPattern(folder string) string {
	p := "^TestUnifiedSpec$"
	for _, el := range strings.Split(folder, "/") {
		p += "/^" + regexp.QuoteMeta(el) + "$"
	}
	return p + `/\.json$`
}
