// Package bench owns dumbobench's workloads and measurement: the benchmark
// registry, the interleaved sampler, the statistics, the machine's floor,
// the server's CPU time (proccpu.go), issue 19's goals (goals.go) and the
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
package bench
