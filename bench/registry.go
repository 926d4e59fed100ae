package bench

// All returns every benchmark, in report order, sized by cfg.
func All(cfg *Config) []Benchmark {
	var bs []Benchmark
	for _, part := range [][]Benchmark{
		floorBenchmarks(), crudBenchmarks(), queryBenchmarks(), joinBenchmarks(),
		docUpdateBenchmarks(), bulkBenchmarks(cfg.Import), rawBenchmarks(), txnBenchmarks(), vcBenchmarks(), remoteBenchmarks(),
		largeDocBenchmarks(cfg), changeStreamBenchmarks(), memoryBenchmarks(), soakBenchmarks(), embeddedBenchmarks(),
		scaleBenchmarks(cfg.Scales),
	} {
		bs = append(bs, part...)
	}
	return bs
}
