// Command dumbobench runs DumboDB's benchmark suite against any
// MongoDB-compatible servers, side by side, and writes report.md,
// results.json and multipliers.svg.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/dumbodb/dumbodb/bench"
	"github.com/dumbodb/dumbodb/storage"
)

const usage = `Usage:
  dumbobench run --target NAME=URL [--target NAME=URL ...] [options]
  dumbobench run --start [options]

Options:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && args[0] == echoCommand {
		return runEchoServer(stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	opts, err := parseFlags(args[1:], stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "dumbobench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := execute(ctx, opts, "dumbobench "+strings.Join(args, " "), stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "dumbobench: %v\n", err)
		return 1
	}
	return 0
}

// options are the flags of `dumbobench run`.
type options struct {
	targets  []bench.Target
	baseline string
	filter   *regexp.Regexp
	out      string
	samples  int
	duration time.Duration
	warmup   time.Duration
	imports  int
	start    bool
	peer     bool
	quick    bool
	families []string
	dataDirs map[string]string // target name -> data directory
	soak     time.Duration     // 0: no Soak family
	cacheMB  int               // --cacheSizeMB of the servers --start starts
	server   serverFlags       // more flags for the DumboDB servers --start starts
	s3Remote string            // an s3:// URL prefix for the Remote family's S3 benchmarks
	scales   scalesFlag        // the Scale family's sizes
}

// scalesFlag is --scale: the sizes, in documents, of the Scale family.
type scalesFlag []int

func (s *scalesFlag) String() string {
	labels := make([]string, len(*s))
	for i, n := range *s {
		labels[i] = bench.ScaleLabel(n)
	}
	return strings.Join(labels, ",")
}

func (s *scalesFlag) Set(v string) error {
	sizes, err := bench.ParseScales(v)
	*s = sizes
	return err
}

// serverFlags collects --server-flag.
type serverFlags []string

func (f *serverFlags) String() string { return strings.Join(*f, " ") }

func (f *serverFlags) Set(s string) error {
	if !strings.HasPrefix(s, "-") {
		return fmt.Errorf("want a dumbodb flag such as --busyPollMicros=0, got %q", s)
	}
	*f = append(*f, s)
	return nil
}

// defaultSoak is the soak of `--only Soak` without --soak: long enough to
// see the mix run, short enough for a check; the soak goal is read over --soak=30m.
const defaultSoak = time.Minute

type targetsFlag []bench.Target

func (t *targetsFlag) String() string { return fmt.Sprint(*t) }

func (t *targetsFlag) Set(s string) error {
	name, url, ok := strings.Cut(s, "=")
	if !ok || name == "" || url == "" {
		return fmt.Errorf("want NAME=URL, got %q", s)
	}
	*t = append(*t, bench.Target{Name: name, URL: url})
	return nil
}

// dataDirsFlag collects --data-dir NAME=DIR.
type dataDirsFlag map[string]string

func (d dataDirsFlag) String() string { return fmt.Sprint(map[string]string(d)) }

func (d dataDirsFlag) Set(s string) error {
	name, dir, ok := strings.Cut(s, "=")
	if !ok || name == "" || dir == "" {
		return fmt.Errorf("want NAME=DIR, got %q", s)
	}
	d[name] = dir
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{dataDirs: map[string]string{}, scales: scalesFlag{defaultScale}}
	var targets targetsFlag
	var filter, only string
	fs := flag.NewFlagSet("dumbobench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&targets, "target", "a server to measure, NAME=mongodb://HOST:PORT (repeatable)")
	fs.StringVar(&o.baseline, "baseline", "", "target the multipliers compare against (default: ferretdb with --start, else the first target)")
	fs.StringVar(&filter, "filter", "", "run only benchmarks whose name matches this regular expression")
	fs.StringVar(&only, "only", "", "run only these families, comma-separated: the first part of benchmark names (LargeDoc, VC, FindOne, ...); combines with --filter")
	fs.Var(dataDirsFlag(o.dataDirs), "data-dir", "NAME=DIR: the data directory of target NAME, for LargeDoc/StorageGrowth (repeatable; --start sets its own)")
	fs.StringVar(&o.out, "out", "bench-out", "directory for report.md, results.json and multipliers.svg")
	fs.IntVar(&o.samples, "samples", 10, "interleaved rounds per benchmark")
	fs.DurationVar(&o.duration, "duration", time.Second, "time per target per round")
	fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "untimed warm-up per target")
	fs.IntVar(&o.imports, "import-docs", 100000, "documents loaded by the Import benchmarks")
	fs.BoolVar(&o.quick, "quick", false, "short run: 5 rounds of 200ms, 100ms warm-up, 10,000-document imports, LargeDoc in four sizes (4 KB to 1 MB) of 1 MiB collections, one round, Scale at 100K (explicit flags win)")
	fs.BoolVar(&o.start, "start", false, "build and start DumboDB from this tree, and FerretDB as the peer; when LargeDoc benchmarks are selected, also "+
		wholeDocName+" (--largeDocThreshold 0: path index off), which runs those only")
	fs.BoolVar(&o.peer, "peer", true, "with --start, also start FerretDB (../shared/tools/peer.sh)")
	fs.DurationVar(&o.soak, "soak", 0, "also run the Soak family for this long (the soak goal is read over 30m; --only Soak alone runs it for 1m)")
	fs.IntVar(&o.cacheMB, "cacheSizeMB", storage.DefaultCacheBytes>>20, "with --start, the --cacheSizeMB of the DumboDB servers, which the memory goal adds its overhead to")
	fs.StringVar(&o.s3Remote, "s3-remote", "", "an s3:// URL (bucket, prefix and endpoint) the Remote family pushes to and clones from; the target's server reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (without it, the S3 benchmarks are n/a)")
	fs.Var(&o.scales, "scale", "the Scale family's collection sizes, comma-separated: 100K, 1M, 10M (--quick: 100K); the family runs only when --only names it, and loads each size once per target")
	fs.Var(&o.server, "server-flag", "with --start, one more flag for the DumboDB servers, e.g. --server-flag=--busyPollMicros=0 (repeatable)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.quick {
		applyQuick(fs, o)
	}
	for _, f := range strings.Split(only, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.families = append(o.families, f)
		}
	}
	if o.soak == 0 && slices.Contains(o.families, "Soak") {
		o.soak = defaultSoak
	}
	o.targets = targets
	if !o.start && len(o.targets) == 0 {
		return nil, errors.New("give at least one --target, or --start")
	}
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			return nil, fmt.Errorf("--filter: %w", err)
		}
		o.filter = re
	}
	if o.samples < 1 || o.duration <= 0 || o.imports < 1 || o.cacheMB < 1 || o.soak < 0 {
		return nil, errors.New("--samples, --duration, --import-docs and --cacheSizeMB must be positive, --soak not negative")
	}
	return o, nil
}

// applyQuick shrinks the defaults the user did not set explicitly.
func applyQuick(fs *flag.FlagSet, o *options) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["samples"] {
		o.samples = 5
	}
	if !set["duration"] {
		o.duration = 200 * time.Millisecond
	}
	if !set["warmup"] {
		o.warmup = 100 * time.Millisecond
	}
	if !set["import-docs"] {
		o.imports = 10000
	}
	if !set["scale"] {
		o.scales = scalesFlag{quickScale}
	}
}

// The Scale family's default size, and with --quick.
const (
	defaultScale = 1_000_000
	quickScale   = 100_000
)

func execute(ctx context.Context, o *options, command string, stdout, stderr io.Writer) error {
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	cfg := &bench.Config{Filter: o.filter, Families: o.families, Quick: o.quick, Samples: o.samples,
		Duration: o.duration, Warmup: o.warmup, Import: o.imports, Soak: o.soak, OutDir: o.out, Progress: logf,
		S3Remote: o.s3Remote, Scales: o.scales}
	benches := bench.All(cfg)
	if !slices.ContainsFunc(benches, cfg.Selected) {
		return errors.New("no benchmark matches --filter and --only (the Soak family runs with --soak, the Scale family with --only Scale)")
	}
	targets := o.targets
	if o.start {
		largeDoc := slices.ContainsFunc(benches, func(b bench.Benchmark) bool {
			return strings.HasPrefix(b.Name, "LargeDoc/") && cfg.Selected(b)
		})
		s, err := startServers(ctx, o.peer, largeDoc, o.cacheMB, o.server, logf)
		if err != nil {
			return err
		}
		defer s.stop()
		targets = append(s.targets, targets...)
		cfg.Echo, cfg.StartDumbo = startEcho, s.startOn
	}
	cfg.Embedded = startEmbedded
	for name, dir := range o.dataDirs {
		i := slices.IndexFunc(targets, func(t bench.Target) bool { return t.Name == name })
		if i < 0 {
			return fmt.Errorf("--data-dir %s=%s: no target named %s", name, dir, name)
		}
		targets[i].DataDir = dir
	}
	baseline := o.baseline
	if baseline == "" {
		baseline = defaultBaseline(targets)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return fmt.Errorf("out directory: %w", err)
	}
	cfg.Targets, cfg.Baseline = targets, baseline
	results, err := bench.Run(ctx, cfg, benches)
	if err != nil && results == nil {
		return err
	}
	meta := bench.Meta{Date: time.Now().UTC().Format(time.RFC3339), Command: command, Targets: targets,
		Baseline: baseline, Samples: o.samples, Duration: o.duration.String(), Warmup: o.warmup.String(), Soak: soakString(o.soak),
		Machine: fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}
	if werr := bench.WriteReport(o.out, meta, results); werr != nil {
		return werr
	}
	fmt.Fprintln(stdout, bench.SummaryLine(baseline, results))
	for _, line := range bench.GoalLines(bench.EvaluateGoals(results)) {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "report: %s/report.md\n", o.out)
	return err
}

func soakString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// defaultBaseline prefers the peer, so that multipliers read as "DumboDB
// versus the reference"; otherwise the first target.
func defaultBaseline(targets []bench.Target) string {
	for _, t := range targets {
		if t.Name == peerName {
			return t.Name
		}
	}
	if len(targets) == 0 {
		return ""
	}
	return targets[0].Name
}
