package query

// The window function table of $setWindowFields: the functions that are
// not $group accumulators, in groups by topic, each group sorted by name.
// Every accumulator of accTable but the JavaScript ones is a window
// function too, folding each document's window, and takes a 'window'.
var windowTable = [][]windowEntry{
	{ // ranks by the sortBy
		{name: "$denseRank", compile: compileRank},
		{name: "$documentNumber", compile: compileRank},
		{name: "$rank", compile: compileRank},
	},
	{ // values of other documents, in sortBy order
		{name: "$derivative", compile: compileRateFunc, window: true},
		{name: "$expMovingAvg", compile: compileExpMovingAvg},
		{name: "$integral", compile: compileRateFunc, window: true},
		{name: "$shift", compile: compileShift},
	},
	{ // filling in missing values
		{name: "$linearFill", compile: compileFill},
		{name: "$locf", compile: compileFill},
	},
	{ // accumulators $group does not have
		{name: "$covariancePop", compile: foldWindow(compileCovariance), window: true},
		{name: "$covarianceSamp", compile: foldWindow(compileCovariance), window: true},
	},
}

// windowEntry is one row of windowTable; window: the function takes a
// 'window' field.
type windowEntry struct {
	name    string
	compile windowCompiler
	window  bool
}

func (e windowEntry) rowName() string { return e.name }

// windowCompiler compiles one output field's window function.
type windowCompiler func(w *windowSpec) (windowFunc, error)

// windowFuncs finds windowTable's rows by name.
var windowFuncs = indexTable(windowTable)

// lookupWindowFunc finds a window function: a row of windowTable or an
// accumulator.
func lookupWindowFunc(name string) (windowEntry, bool) {
	if e, ok := windowFuncs[name]; ok {
		return e, true
	}
	if acc, ok := accumulatorOps[name]; ok && !acc.js {
		return windowEntry{name: name, compile: foldWindow(acc.compile), window: true}, true
	}
	return windowEntry{}, false
}
