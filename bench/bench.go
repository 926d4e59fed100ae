package bench

import (
	"context"
	"regexp"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
)

// Groups, in the order the report shows them.
const (
	GroupFloor         = "Floor"
	GroupReads         = "Single-document reads"
	GroupInserts       = "Single-document inserts"
	GroupUpdates       = "Single-document updates"
	GroupFilters       = "Filters, count, distinct"
	GroupJoins         = "Joins"
	GroupDocUpdates    = "Updates inside documents"
	GroupBulk          = "Bulk"
	GroupConcurrency   = "Concurrency"
	GroupRaw           = "Raw wire"
	GroupTxn           = "Transactions"
	GroupImport        = "Import"
	GroupVC            = "Version control"
	GroupRemote        = "Remotes"
	GroupLargeDoc      = "Large documents"
	GroupChangeStreams = "Change streams"
	GroupMemory        = "Server memory"
	GroupEmbedded      = "Embedded"
	GroupScale         = "Scale"
)

// GroupOrder lists every group in report order.
var GroupOrder = []string{GroupFloor, GroupReads, GroupInserts, GroupUpdates, GroupFilters,
	GroupJoins, GroupDocUpdates, GroupBulk, GroupConcurrency, GroupRaw, GroupTxn, GroupImport, GroupVC, GroupRemote, GroupLargeDoc, GroupChangeStreams, GroupMemory, GroupEmbedded, GroupScale}

// Target is a server under test, reached at a mongodb:// URL.
type Target struct {
	Name string
	URL  string
	// DataDir, if known, is the server's data directory: benchmarks that
	// measure storage (LargeDoc/StorageGrowth) read its size.
	DataDir string `json:",omitempty"`
	// Only, if set, is a regular expression: the target runs only the
	// benchmarks whose name matches (dumbodb-wholedoc runs ^LargeDoc/).
	Only string `json:",omitempty"`
	// Pid, if known (the server runs on this machine: --start started
	// it), is the server's process id: results then carry the server's
	// CPU time per operation, read from /proc/<pid>/stat.
	Pid int `json:",omitempty"`
	// CacheSizeMB, if known (--start passes it), is the server's
	// --cacheSizeMB: the memory goal bounds its RSS by it plus
	// ServerRSSOverheadMB.
	CacheSizeMB int `json:",omitempty"`
}

// MachineTarget names the pseudo-target of benchmarks that measure this
// machine rather than a server.
const MachineTarget = "machine"

// Config is one run of the suite.
type Config struct {
	Targets  []Target
	Baseline string         // target name the multipliers compare against
	Filter   *regexp.Regexp // benchmarks whose name matches; nil runs all
	Samples  int            // interleaved rounds per benchmark
	Duration time.Duration  // time per target per round (at least one call)
	Warmup   time.Duration  // untimed calls per target before the first round
	Import   int            // documents in the Import benchmarks
	// Families, if set, limits the run to benchmarks whose name's first
	// component (Floor, FindOne, VC, LargeDoc, ...) is listed.
	Families []string
	// Quick shrinks the LargeDoc family: fewer sizes, 4 MiB collections.
	Quick bool
	// Soak is how long the Soak family runs; 0 leaves it out of the run.
	Soak   time.Duration
	OutDir string // where Floor keeps its preallocated file
	// S3Remote is an s3:// URL prefix the Remote family's S3 benchmarks
	// push to and clone from ("": they do not apply).
	S3Remote string
	// Echo starts the do-nothing server of Floor/RawEcho (nil: that
	// benchmark does not apply).
	Echo EchoServer
	// Embedded starts the in-process servers of the Embedded family (nil:
	// it does not apply).
	Embedded EmbeddedServer
	// Scales are the collection sizes, in documents, the Scale family runs
	// at, each in turn (none: the family is left out).
	Scales []int
	// StartDumbo starts a DumboDB process of its own, on which the Scale
	// family's restarts run (nil: they do not apply).
	StartDumbo DumboStarter
	Progress   func(format string, args ...any)
}

// Benchmark is one named workload.
type Benchmark struct {
	Name  string
	Group string
	// Unit is what one measured item is ("op", "doc", "txn"); PerCall is
	// how many units one call of the workload performs, so that batch
	// benchmarks report µs per document.
	Unit    string
	PerCall int
	// Clients run the workload concurrently, each on its own connection.
	Clients int
	// Long calls (an import, a 50K-document delete) already average over
	// many documents: they skip warm-up and run at most longRounds rounds.
	Long bool
	// Rounds, if positive, caps the rounds further (LargeDoc in --quick
	// runs one: FerretDB takes seconds per call there).
	Rounds int
	// Asked benchmarks run only when Config.Families names their family:
	// they take minutes per target (the Scale family loads a million
	// documents), too long for a run of every family.
	Asked bool
	// Once benchmarks make exactly one call per client and target, without
	// warm-up: the call changes what the benchmarks after it find (a load,
	// an index built, a commit), so it cannot repeat.
	Once bool
	// Docs, if positive, is how many documents the collection the benchmark
	// works on holds: the report also divides its figure by it, so that
	// costs at different sizes compare (the Scale family).
	Docs int
	// DumboOnly benchmarks show n/a on other servers.
	DumboOnly bool
	// Machine benchmarks measure this machine once, not each target.
	Machine bool
	// Quantity benchmarks measure an amount in Unit (bytes per commit),
	// not time: their workload's Measure runs once per target.
	Quantity bool
	// Soak benchmarks run once, for Config.Soak, without warm-up, and
	// only when Config.Soak is set: their figure is the server's memory
	// over time (soak.go).
	Soak  bool
	Setup func(ctx context.Context, e *Env) (*Workload, error)
}

const longRounds = 2

// Env is what a benchmark's Setup gets: a fresh, empty collection on one
// target (nil for Machine benchmarks).
type Env struct {
	Client *mongo.Client
	DB     *mongo.Database
	Coll   *mongo.Collection
	Cfg    *Config
	// URL is the target's connection string: the Raw family dials its
	// host itself.
	URL string
	// DataDir is the target's data directory, "" when unknown.
	DataDir string
	// Dumbo is set on DumboDB targets (buildInfo has dumbodbVersion).
	Dumbo bool
	// Pid is the server's process id, 0 when unknown.
	Pid int
	// CacheSizeMB is the server's --cacheSizeMB, 0 when unknown.
	CacheSizeMB int
}

// Workload is a benchmark ready to be timed on one target.
type Workload struct {
	// Call performs one timed call; n numbers the calls on this target
	// (unique across clients, warm-up included) so inserts get fresh ids.
	Call func(ctx context.Context, n int64) error
	// Prepare, if set, runs untimed before each call: it restores what the
	// previous call consumed (a popped array element, a dropped collection).
	Prepare func(ctx context.Context, n int64) error
	// Close, if set, releases what Setup acquired beyond the collection.
	Close func()
	// Measure is the workload of a Quantity benchmark (Call is then
	// unused): it returns the amount measured, in the benchmark's Unit.
	Measure func(ctx context.Context) (float64, error)
	// Pid, if set, is a process the workload started whose CPU its calls
	// cost (a machine benchmark's own server): its CPU is read as a
	// target's is.
	Pid int
}
