// Command dumbospec runs the MongoDB drivers' specification tests in the
// unified test format against a fresh DumboDB, and counts the spec cases
// that pass, fail and are skipped. `make spec` runs it.
//
// The tests and their runner are those of the Go driver
// go.mongodb.org/mongo-driver v1 (the test package mongo/integration/unified
// and the module's testdata), at the version tools/go.mod pins. dumbospec
// builds the runner from the Go module proxy once per tools/go.mod, into
// the cache folder, then starts the dumbodb binary it is given on a free
// port with an empty data directory and runs each spec folder the runner
// knows that matches -run:
//
//	dumbospec [-bin bin/dumbodb] [-run REGEX] [-cache DIR] [-logs DIR]
//
// It prints a line per folder and a closing 'N passed, N failed, N skipped'
// line, and exits 0 when the run completed, whatever the pass rate, and
// every line of the server's log follows mongod's schema.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/logschema"
)

type options struct {
	bin, tools, cache, logs string
	expect                  string // the known-failures file ("": none)
	run                     *regexp.Regexp
	dirTimeout, total       time.Duration
	buildTimeout            time.Duration
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dumbospec:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("dumbospec", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "bin/dumbodb", "the dumbodb binary to test")
	fs.StringVar(&o.tools, "tools", "tools", "the folder of the go.mod that pins the driver")
	fs.StringVar(&o.cache, "cache", ".tools/driver-spec", "where the runner is built")
	fs.StringVar(&o.logs, "logs", "", "where the raw logs go (default: a new folder under -cache)")
	fs.StringVar(&o.expect, "expect", "", "file of the cases known to fail (folder/file.json/case per line, # comments): "+
		"any other failure makes the run fail, and a listed case that passes is reported")
	runRe := fs.String("run", ".", "regular expression: the spec folders to run (crud/unified, sessions, ...)")
	fs.DurationVar(&o.dirTimeout, "dir-timeout", 5*time.Minute, "time allowed for one spec folder")
	fs.DurationVar(&o.total, "timeout", 30*time.Minute, "time allowed for all folders; the cases of folders not reached count as failed")
	fs.DurationVar(&o.buildTimeout, "build-timeout", 15*time.Minute, "time allowed for building the runner")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	re, err := regexp.Compile(*runRe)
	if err != nil {
		fmt.Fprintln(fs.Output(), "dumbospec: -run:", err)
		return o, err
	}
	o.run = re
	return o, nil
}

func run(o options, stdout, stderr io.Writer) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.buildTimeout)
	defer cancel()
	r, err := buildRunner(ctx, o.tools, o.cache, stderr)
	if err != nil {
		return err
	}
	folders, err := r.folders(o.run)
	if err != nil {
		return err
	}
	logs, err := logsDir(o)
	if err != nil {
		return err
	}
	url, stop, err := startServer(o.bin, logs)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	started := time.Now()
	var total counts
	for _, folder := range folders {
		c, err := runFolder(r, folder, url, logs, o.dirTimeout, time.Until(started.Add(o.total)))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, c.line(folder))
		total.add(c)
	}
	fmt.Fprintf(stdout, "%d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
	fmt.Fprintf(stderr, "elapsed %s; raw logs in %s\n", time.Since(started).Round(time.Second), logs)
	if o.expect == "" {
		return nil
	}
	return checkExpected(o.expect, total, stdout)
}

// checkExpected fails the run when a case fails that the known-failures
// file does not list, and names listed cases that now pass (to be removed).
func checkExpected(path string, total counts, stdout io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			known[line] = true
		}
	}
	for _, p := range total.passes {
		if known[p] {
			fmt.Fprintf(stdout, "now passing (remove it from %s): %s\n", path, p)
		}
	}
	var unexpected []string
	for _, f := range total.failures {
		if !known[f] {
			unexpected = append(unexpected, f)
		}
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("%d cases failed that %s does not list:\n  %s", len(unexpected), path, strings.Join(unexpected, "\n  "))
	}
	return nil
}

func logsDir(o options) (string, error) {
	dir := o.logs
	if dir == "" {
		dir = filepath.Join(o.cache, "logs", time.Now().Format("20060102-150405"))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

// startServer starts bin with an empty data directory and the test
// commands (configureFailPoint) the spec tests use, its log in logs. stop
// stops it and checks its log against mongod's schema: the spec tests
// drive commands and errors the other tests do not, and a line a log
// pipeline built for mongod could not read fails the run.
func startServer(bin, logs string) (url string, stop func() error, err error) {
	data, err := os.MkdirTemp("", "dumbospec-")
	if err != nil {
		return "", nil, err
	}
	log, err := os.Create(filepath.Join(logs, "server.log"))
	if err != nil {
		return "", nil, err
	}
	defer log.Close()
	p, err := dumboproc.Start(context.Background(), bin, data, log, "--enableTestCommands")
	if err != nil {
		os.RemoveAll(data)
		return "", nil, fmt.Errorf("%w (log %s)", err, log.Name())
	}
	stop = func() error {
		if _, err := p.Stop(os.Interrupt); err != nil {
			fmt.Fprintln(os.Stderr, "dumbospec:", err)
		}
		os.RemoveAll(data)
		return logschema.CheckFile(log.Name())
	}
	return "mongodb://" + p.Addr() + "/", stop, nil
}
