package bench

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// Statuses of a Result.
const (
	StatusOK          = "ok"
	StatusUnsupported = "unsupported" // setup or warm-up failed with a server error
	StatusNA          = "n/a"         // the benchmark does not apply to this server
	StatusError       = "error"       // failed after it had started to work
)

// Result is one benchmark on one target.
type Result struct {
	Benchmark string    `json:"benchmark"`
	Group     string    `json:"group"`
	Target    string    `json:"target"`
	Unit      string    `json:"unit"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	SamplesUS []float64 `json:"samples_us,omitempty"` // µs per unit of every timed call
	Units     int64     `json:"units"`
	BusyUS    float64   `json:"busy_us"` // time the units took (wall time when concurrent)
	MedianUS  float64   `json:"median_us"`
	P99US     float64   `json:"p99_us"`
	OpsPerSec float64   `json:"ops_per_sec"`
	// Multiplier is median / baseline median (0: none); FloorRatio is
	// median / the fdatasync floor's median (0: none).
	Multiplier float64 `json:"multiplier"`
	FloorRatio float64 `json:"floor_ratio"`
	// PingRatio is median / the same target's ping median through the
	// same client: PingBenchmark for driver rows, RawPingBenchmark for
	// the Raw family (0: none).
	PingRatio float64 `json:"ping_ratio"`
	// ServerCPUUS is the server's CPU time, user plus system, over the
	// timed windows, when CPUMeasured: the target's pid is known and the
	// benchmark has no untimed Prepare inside its windows. ServerCPUPerUnitUS
	// divides it by Units.
	CPUMeasured        bool    `json:"cpu_measured,omitempty"`
	ServerCPUUS        float64 `json:"server_cpu_us,omitempty"`
	ServerCPUPerUnitUS float64 `json:"server_cpu_us_per_unit,omitempty"`
	// Quantity results are amounts in Unit (bytes per commit), not times:
	// samples_us, median_us and p99_us then hold those amounts.
	Quantity bool `json:"quantity,omitempty"`
	// RSSMeasured: the target's pid is known, and its resident memory was
	// read from before Setup to after the database's drop.
	// ServerRSSPeakMB is the highest it reached (the kernel's VmHWM, reset
	// at the start), ServerRSSEndMB the last reading; ServerCacheMB is the
	// target's --cacheSizeMB (0: unknown), which the memory goal adds its
	// overhead to.
	RSSMeasured     bool    `json:"rss_measured,omitempty"`
	ServerRSSPeakMB float64 `json:"server_rss_peak_mb,omitempty"`
	ServerRSSEndMB  float64 `json:"server_rss_end_mb,omitempty"`
	ServerCacheMB   int     `json:"server_cache_mb,omitempty"`
	// ServerAnonPeakMB is the highest RssAnon sampled (every 100 ms): the
	// heap and stacks, without the file pages the RSS also counts.
	ServerAnonPeakMB float64 `json:"server_anon_peak_mb,omitempty"`
	// Soak benchmarks keep every RSS sample and the least-squares slope
	// of those after the warm-up (SlopeMeasured: there were enough).
	RSSSamples        []RSSSample `json:"rss_samples,omitempty"`
	SlopeMeasured     bool        `json:"slope_measured,omitempty"`
	RSSSlopeMBPerHour float64     `json:"rss_slope_mb_per_hour,omitempty"`
	// MemorySamples are a soak's readings of DumboDB's memory by part
	// (soakmemory.go).
	MemorySamples []MemorySample `json:"memory_samples,omitempty"`
	// Docs is the benchmark's Docs (0: none); PerDoc divides one call's
	// median time, in µs, or the amount measured by it (perDoc).
	Docs   int     `json:"docs,omitempty"`
	PerDoc float64 `json:"per_doc,omitempty"`
}

// durable is the write concern of every write: acknowledged by the primary
// and journaled, so that no target gets a free pass.
func durable() *writeconcern.WriteConcern {
	j := true
	return &writeconcern.WriteConcern{W: 1, Journal: &j}
}

// server is a connected target.
type server struct {
	Target
	client *mongo.Client
	dumbo  bool
	only   *regexp.Regexp // Target.Only compiled; nil runs everything
}

func connect(ctx context.Context, t Target) (*server, error) {
	opts := options.Client().ApplyURI(t.URL).SetWriteConcern(durable()).
		SetMaxPoolSize(128).SetServerSelectionTimeout(15 * time.Second)
	c, err := mongo.Connect(opts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s (%s): %w", t.Name, t.URL, err)
	}
	var info bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		c.Disconnect(context.Background())
		return nil, fmt.Errorf("buildInfo on %s (%s): %w", t.Name, t.URL, err)
	}
	_, dumbo := info["dumbodbVersion"]
	s := &server{Target: t, client: c, dumbo: dumbo}
	if t.Only != "" {
		if s.only, err = regexp.Compile(t.Only); err != nil {
			c.Disconnect(context.Background())
			return nil, fmt.Errorf("target %s: only: %w", t.Name, err)
		}
	}
	return s, nil
}

// Selected reports whether the run includes benchmark b (by Filter and
// Families; a target's Only narrows it further for that target). A Soak
// benchmark runs exactly when Config.Soak is set, whatever the families,
// and an Asked one only when Families names its family: they take
// minutes, so they are asked for, never included by default.
func (cfg *Config) Selected(b Benchmark) bool {
	if cfg.Filter != nil && !cfg.Filter.MatchString(b.Name) {
		return false
	}
	if b.Soak {
		return cfg.Soak > 0
	}
	if len(cfg.Families) == 0 {
		return !b.Asked
	}
	family, _, _ := strings.Cut(b.Name, "/")
	return slices.Contains(cfg.Families, family)
}

// Run runs every benchmark whose name matches cfg.Filter against every
// target and returns the results with their statistics.
func Run(ctx context.Context, cfg *Config, benches []Benchmark) ([]Result, error) {
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.client.Disconnect(context.Background())
		}
	}()
	for _, t := range cfg.Targets {
		s, err := connect(ctx, t)
		if err != nil {
			return nil, err
		}
		servers = append(servers, s)
	}
	var results []Result
	for _, b := range benches {
		if !cfg.Selected(b) {
			continue
		}
		rs := runBenchmark(ctx, cfg, b, servers)
		for _, r := range rs {
			cfg.progress("%-40s %-10s %s", r.Benchmark, r.Target, brief(r))
		}
		results = append(results, rs...)
		if err := ctx.Err(); err != nil {
			return results, err
		}
	}
	Summarize(results, cfg.Baseline)
	return results, nil
}

func (cfg *Config) progress(format string, args ...any) {
	if cfg.Progress != nil {
		cfg.Progress(format, args...)
	}
}

func brief(r Result) string {
	if r.Status != StatusOK {
		return r.Status + " " + r.Reason
	}
	line := ""
	if r.Quantity {
		line = fmt.Sprintf("%.0f %s", Median(r.SamplesUS), r.Unit)
	} else {
		st := stats(r.SamplesUS)
		line = fmt.Sprintf("median %.1f µs/%s, p99 %.1f", st.median, r.Unit, st.p99)
	}
	if r.RSSMeasured {
		line += fmt.Sprintf(", server RSS peak %.0f MB (anonymous %.0f)", r.ServerRSSPeakMB, r.ServerAnonPeakMB)
	}
	if r.SlopeMeasured {
		line += fmt.Sprintf(", slope %.1f MB/h", r.RSSSlopeMBPerHour)
	}
	return line
}

// slot is one target's side of a benchmark while it runs.
type slot struct {
	res Result
	w   *Workload
	env *Env
	n   atomic.Int64
	pid int // the server whose CPU the samples read, 0: none
	// rss watches the server's memory over the whole benchmark, set up
	// and drop included (nil: its pid is unknown).
	rss    *rssWatch
	memPid int
	// soak: the watch covers the timed calls alone, since the other
	// targets' soaks run meanwhile and an idle stretch would bend the slope.
	soak bool
	// status reads a DumboDB soak's memory by part (nil: none).
	status *statusWatch
}

func runBenchmark(ctx context.Context, cfg *Config, b Benchmark, servers []*server) []Result {
	var slots []*slot
	if b.Machine {
		slots = append(slots, prepare(ctx, cfg, b, nil))
	} else {
		for _, s := range servers {
			// A target limited to other benchmarks gets no row at all.
			if s.only == nil || s.only.MatchString(b.Name) {
				slots = append(slots, prepare(ctx, cfg, b, s))
			}
		}
	}
	rounds := max(cfg.Samples, 1)
	if b.Long {
		rounds = min(rounds, longRounds)
	}
	if b.Rounds > 0 {
		rounds = min(rounds, b.Rounds)
	}
	if b.Quantity || b.Soak || b.Once {
		rounds = 1
	}
	d := cfg.Duration
	switch {
	case b.Soak:
		d = cfg.Soak
	case b.Once:
		d = 0 // each client makes its first call only
	}
	for r := range rounds {
		// Rotate who goes first so that neither target always runs on a
		// cache or disk the other has just warmed.
		for k := range slots {
			s := slots[(k+r)%len(slots)]
			if s.w == nil {
				continue
			}
			if err := s.sample(ctx, b, d); err != nil {
				s.res.Status, s.res.Reason = StatusError, shorten(err)
				s.res.SamplesUS = nil
				s.finish(ctx)
			}
		}
	}
	var out []Result
	for _, s := range slots {
		s.finish(ctx)
		out = append(out, s.res)
	}
	return out
}

// prepare sets a benchmark up on one server (nil: the machine) and warms
// it up. A slot without a workload has its final status already.
func prepare(ctx context.Context, cfg *Config, b Benchmark, s *server) *slot {
	sl := &slot{res: Result{Benchmark: b.Name, Group: b.Group, Target: MachineTarget, Unit: b.Unit, Status: StatusOK, Quantity: b.Quantity, Docs: b.Docs}}
	sl.env = &Env{Cfg: cfg}
	if s != nil {
		sl.res.Target = s.Name
		if b.DumboOnly && !s.dumbo {
			sl.res.Status, sl.res.Reason = StatusNA, "DumboDB only"
			return sl
		}
		sl.env.Client, sl.env.URL = s.client, s.URL
		sl.env.DataDir, sl.env.Dumbo, sl.env.Pid = s.DataDir, s.dumbo, s.Pid
		sl.env.CacheSizeMB = s.CacheSizeMB
		sl.watchMemory(b, s.Target)
		sl.env.DB = s.client.Database("dumbobench")
		sl.env.Coll = sl.env.DB.Collection(collName(b.Name))
		// Dropping the database also removes the side collections of the
		// previous benchmark (joins, TPC-C).
		if err := sl.env.DB.Drop(ctx); err != nil {
			sl.fail(fmt.Errorf("drop database: %w", err))
			return sl
		}
	}
	w, err := b.Setup(ctx, sl.env)
	if err != nil {
		sl.fail(err)
		return sl
	}
	sl.w = w
	if w.Pid != 0 {
		sl.pid = w.Pid
	}
	if s != nil && !b.Quantity && w.Prepare == nil {
		// A Prepare runs between the timed calls, inside the window the
		// server's CPU is read over: its work would count as theirs.
		sl.pid = s.Pid
	}
	if b.Long || b.Quantity || b.Soak || b.Once {
		return sl
	}
	if err := sl.warmup(ctx, b, cfg.Warmup); err != nil {
		sl.fail(err)
		sl.finish(ctx)
	}
	return sl
}

// fail records why a benchmark could not start: a server error means the
// server does not support what the benchmark needs.
func (s *slot) fail(err error) {
	s.res.Status = StatusError
	var se mongo.ServerError
	var un errUnsupported
	var na errNotApplicable
	switch {
	case errors.As(err, &na):
		s.res.Status = StatusNA
	case errors.As(err, &se) || errors.As(err, &un):
		s.res.Status = StatusUnsupported
	}
	s.res.Reason = shorten(err)
}

func shorten(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if len(msg) > 160 {
		msg = msg[:157] + "..."
	}
	return msg
}

// finish releases the workload and the database (once).
func (s *slot) finish(ctx context.Context) {
	if s.w != nil && s.w.Close != nil {
		s.w.Close()
	}
	s.w = nil
	if s.env.Coll != nil {
		s.env.DB.Drop(ctx)
		s.env.Coll = nil
	}
	s.stopWatchingMemory()
}

// watchMemory starts reading the server's resident memory, if its pid is
// known: before Setup, since loading a benchmark's data is part of what
// the memory budget must hold.
func (s *slot) watchMemory(b Benchmark, t Target) {
	if t.Pid == 0 {
		return
	}
	s.res.ServerCacheMB = t.CacheSizeMB
	s.memPid, s.soak = t.Pid, b.Soak
	if !b.Soak {
		s.rss = watchRSS(t.Pid, rssSampleEvery)
	}
}

// stopWatchingMemory records the memory figures (once). A soak also keeps
// its samples and their slope after the warm-up.
func (s *slot) stopWatchingMemory() {
	if s.status != nil {
		samples, err := s.status.stop()
		s.status = nil
		if err != nil {
			s.res.Status, s.res.Reason = StatusError, shorten(err)
		}
		s.res.MemorySamples = samples
	}
	if s.rss == nil {
		return
	}
	f, err := s.rss.stop()
	s.rss = nil
	if err != nil {
		s.res.Status, s.res.Reason = StatusError, shorten(err)
		return
	}
	s.res.RSSMeasured, s.res.ServerRSSPeakMB, s.res.ServerRSSEndMB, s.res.ServerAnonPeakMB = true, f.peak, f.end, f.anonPeak
	if s.soak {
		s.res.RSSSamples = f.samples
		s.res.RSSSlopeMBPerHour, s.res.SlopeMeasured = rssSlope(f.samples, soakWarmup(f.samples))
	}
}

func (s *slot) warmup(ctx context.Context, b Benchmark, d time.Duration) error {
	_, _, err := s.calls(ctx, b, d)
	return err
}

func (s *slot) sample(ctx context.Context, b Benchmark, d time.Duration) error {
	if b.Quantity {
		if s.w.Measure == nil {
			return fmt.Errorf("%s: a Quantity benchmark without Measure", b.Name)
		}
		v, err := s.w.Measure(ctx)
		if err != nil {
			return err
		}
		s.res.SamplesUS = append(s.res.SamplesUS, v)
		s.res.Units++
		return nil
	}
	cpu0, err := s.serverCPU()
	if err != nil {
		return err
	}
	if s.soak {
		s.rss = watchRSS(s.memPid, soakSampleEvery)
		if s.env.Dumbo {
			s.status = watchStatus(s.env.Client, soakStatusEvery)
		}
	}
	lat, busy, err := s.calls(ctx, b, d)
	if s.soak {
		s.stopWatchingMemory()
	}
	if err != nil {
		return err
	}
	cpu1, err := s.serverCPU()
	if err != nil {
		return err
	}
	if s.pid != 0 {
		s.res.CPUMeasured = true
		s.res.ServerCPUUS += cpu1 - cpu0
	}
	per := float64(max(b.PerCall, 1))
	for _, l := range lat {
		s.res.SamplesUS = append(s.res.SamplesUS, l/per)
	}
	s.res.Units += int64(len(lat)) * int64(per)
	s.res.BusyUS += busy
	return nil
}

// serverCPU is the CPU time the slot's server has used so far, in µs (0
// when its pid is unknown).
func (s *slot) serverCPU() (float64, error) {
	if s.pid == 0 {
		return 0, nil
	}
	return processCPU(s.pid)
}

// calls runs the workload's clients until d has passed (each makes at
// least one call) and returns every call's µs and the busy µs: the sum of
// the calls for one client, the wall time for several, since concurrent
// calls overlap.
func (s *slot) calls(ctx context.Context, b Benchmark, d time.Duration) ([]float64, float64, error) {
	clients := max(b.Clients, 1)
	lat := make([][]float64, clients)
	errs := make([]error, clients)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for first := true; first || time.Now().Before(deadline); first = false {
				us, err := s.call(ctx)
				if err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], us)
			}
		})
	}
	wg.Wait()
	wall := float64(time.Since(start).Nanoseconds()) / 1e3
	if err := errors.Join(errs...); err != nil {
		return nil, 0, err
	}
	all := lat[0]
	for _, l := range lat[1:] {
		all = append(all, l...)
	}
	busy := wall
	if clients == 1 {
		busy = 0
		for _, l := range all {
			busy += l
		}
	}
	return all, busy, nil
}

func (s *slot) call(ctx context.Context) (float64, error) {
	n := s.n.Add(1)
	if s.w.Prepare != nil {
		if err := s.w.Prepare(ctx, n); err != nil {
			return 0, fmt.Errorf("prepare call %d: %w", n, err)
		}
	}
	t0 := time.Now()
	if err := s.w.Call(ctx, n); err != nil {
		return 0, err
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e3, nil
}

// collName maps a benchmark name to a collection name.
func collName(bench string) string {
	return strings.NewReplacer("/", "_", ".", "_", "$", "_").Replace(bench)
}
