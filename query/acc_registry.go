package query

// The accumulator table: every $group accumulator, in groups by topic,
// each group sorted by name. Each is also a window function of
// $setWindowFields (window_registry.go), but for $accumulator, which
// mongod refuses there.
var accTable = [][]accEntry{
	{ // numbers
		{name: "$avg", compile: unaryAcc(newAvgAcc)},
		{name: "$count", compile: compileCountAcc},
		{name: "$max", compile: unaryAcc(newMaxAcc)},
		{name: "$min", compile: unaryAcc(newMinAcc)},
		{name: "$stdDevPop", compile: unaryAcc(newStdDevPopAcc)},
		{name: "$stdDevSamp", compile: unaryAcc(newStdDevSampAcc)},
		{name: "$sum", compile: unaryAcc(newSumAcc)},
	},
	{ // values
		{name: "$addToSet", compile: unaryAcc(newAddToSetAcc)},
		{name: "$first", compile: unaryAcc(newFirstAcc)},
		{name: "$last", compile: unaryAcc(newLastAcc)},
		{name: "$mergeObjects", compile: unaryAcc(newMergeObjectsAcc)},
		{name: "$push", compile: unaryAcc(newPushAcc)},
	},
	{ // several values, in input order or by value
		{name: "$firstN", compile: compileNAcc},
		{name: "$lastN", compile: compileNAcc},
		{name: "$maxN", compile: compileNAcc},
		{name: "$minN", compile: compileNAcc},
	},
	{ // the values of the first or last documents by their own sortBy
		{name: "$bottom", compile: compileTopAcc},
		{name: "$bottomN", compile: compileTopAcc},
		{name: "$top", compile: compileTopAcc},
		{name: "$topN", compile: compileTopAcc},
	},
	{ // percentiles
		{name: "$median", compile: compilePercentileAcc},
		{name: "$percentile", compile: compilePercentileAcc},
	},
	{ // server-side JavaScript (acc_js.go)
		{name: "$accumulator", compile: compileJSAcc, js: true},
	},
}

// accEntry is one row of accTable; js marks the JavaScript accumulator,
// which is not a window function.
type accEntry struct {
	name    string
	compile accCompiler
	js      bool
}

func (e accEntry) rowName() string { return e.name }

// accumulatorOps finds accTable's rows by name.
var accumulatorOps = indexTable(accTable)
