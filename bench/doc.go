// Package bench owns dumbobench's workloads and measurement: the benchmark
// registry, the interleaved sampler, the statistics, the machine's floor,
// the server's CPU time (proccpu.go), the goals (goals.go) and the
// reports (report.md, results.json, multipliers.svg).
//
// It talks to servers through the official Go driver, so that every
// target — DumboDB, FerretDB, mongod — is measured through the same client
// code, with one deliberate exception: the Raw family (raw.go) sends
// pre-framed OP_MSG requests over plain TCP (rawwire.go), because the
// driver spends more time per request on the client than the server's
// targets allow, and those rows must measure the server. It frames by hand
// with encoding/binary and the driver's bsoncore and imports no other
// DumboDB package (deps_test.go enforces this), so that the measuring
// code never shares the measured code.
//
// For targets whose pid it knows (dumbobench --start), every sample window
// also reads the server's user + system CPU time from /proc/<pid>/stat
// (in USER_HZ ticks, 100 a second on Linux: a window's figure is within
// 10 ms) and the report divides it by the operations in the windows.
//
// For the same targets it watches the server's resident memory
// (procmem.go): from before a benchmark's setup to after its database is
// dropped, VmRSS is read from /proc/<pid>/status every 100 ms and the peak
// taken from VmHWM, which clear_refs resets at the start so that the peak
// is the benchmark's own and no spike between samples is missed. Each row
// shows that peak, the report a table of each family's highest peak, and
// the memory goal bounds it by the target's --cacheSizeMB (Target.
// CacheSizeMB, which --start passes explicitly) plus ServerRSSOverheadMB.
// The Memory family (memory.go) creates and drops 500 databases and
// reports the RSS they leave behind; the Soak family (soak.go) runs a
// mixed workload for Config.Soak (--soak; not run otherwise), samples the
// RSS about every 2 s (jittered: tickEvery) and fits a least-squares
// slope after the warm-up.
//
// The Scale family (scale.go) loads one collection per target and size
// (Config.Scales) and runs its steps on it in a fixed order; its rows
// carry the collection's size (Result.Docs), and the report divides each
// figure by it too (scalereport.go).
package bench
