// Package bench owns dumbobench's workloads and measurement: the benchmark
// registry, the interleaved sampler, the statistics, the machine's floor
// and the reports (report.md, results.json, multipliers.svg).
//
// It talks to servers only through the official Go driver, so that every
// target — DumboDB, FerretDB, mongod — is measured through the same client
// code; it imports no other DumboDB package (deps_test.go enforces this).
package bench
