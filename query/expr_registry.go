package query

import (
	"math"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The expression operator table: every operator compileOperator knows,
// in groups by topic, each group sorted by name. A row says how the
// operator compiles: over positional arguments with an arity range
// (fixed), with its own argument syntax (special), over an object of
// named arguments (named), or as JavaScript (jsOp: refused in a
// validator).
var exprTable = [][]exprEntry{
	{ // arithmetic
		fixed("$abs", 1, 1, unaryMath("$abs", math.Abs, true)),
		fixed("$add", 0, -1, evalAdd),
		fixed("$divide", 2, 2, evalDivide),
		fixed("$mod", 2, 2, evalMod),
		fixed("$multiply", 0, -1, evalMultiply),
		fixed("$pow", 2, 2, evalPow),
		fixed("$subtract", 2, 2, evalSubtract),
	},
	{ // rounding, roots and logarithms
		fixed("$ceil", 1, 1, unaryMath("$ceil", math.Ceil, true)),
		fixed("$exp", 1, 1, unaryMath("$exp", math.Exp, false)),
		fixed("$floor", 1, 1, unaryMath("$floor", math.Floor, true)),
		fixed("$ln", 1, 1, unaryMath("$ln", math.Log, false)),
		fixed("$log10", 1, 1, unaryMath("$log10", math.Log10, false)),
		fixed("$round", 1, 2, unaryMath("$round", math.RoundToEven, true)),
		fixed("$sqrt", 1, 1, unaryMath("$sqrt", math.Sqrt, false)),
		fixed("$trunc", 1, 2, unaryMath("$trunc", math.Trunc, true)),
	},
	{ // comparison
		fixed("$cmp", 2, 2, evalCmp),
		compareOp("$eq", func(c int) bool { return c == 0 }),
		compareOp("$gt", func(c int) bool { return c > 0 }),
		compareOp("$gte", func(c int) bool { return c >= 0 }),
		compareOp("$lt", func(c int) bool { return c < 0 }),
		compareOp("$lte", func(c int) bool { return c <= 0 }),
		compareOp("$ne", func(c int) bool { return c != 0 }),
	},
	{ // boolean and conditional
		special("$and", compileAndOr),
		special("$cond", compileCond),
		fixed("$ifNull", 2, -1, evalIfNull),
		fixed("$not", 1, 1, evalNot),
		special("$or", compileAndOr),
		special("$switch", compileSwitch),
	},
	{ // literals, variables, types and metadata
		fixed("$isNumber", 1, 1, evalIsNumber),
		special("$let", compileLet),
		special("$literal", compileLiteral),
		special("$meta", compileMeta),
		special("$rand", compileRand),
		fixed("$type", 1, 1, evalType),
	},
	{ // type conversion
		named("$convert", []string{"input", "to", "onError", "onNull", "format", "base", "byteOrder"}, []string{"input", "to"}, evalConvert),
		convertOp("$toBool", "bool"),
		convertOp("$toDate", "date"),
		convertOp("$toDecimal", "decimal"),
		convertOp("$toDouble", "double"),
		convertOp("$toInt", "int"),
		convertOp("$toLong", "long"),
		convertOp("$toObjectId", "objectId"),
		convertOp("$toString", "string"),
	},
	{ // array elements
		fixed("$arrayElemAt", 2, 2, evalArrayElemAt),
		fixed("$first", 1, 1, firstLast("$first", 0)),
		fixed("$in", 2, 2, evalIn),
		fixed("$indexOfArray", 2, 4, evalIndexOfArray),
		fixed("$isArray", 1, 1, evalIsArray),
		fixed("$last", 1, 1, firstLast("$last", -1)),
		fixed("$size", 1, 1, evalSize),
		fixed("$slice", 2, 3, evalSlice),
	},
	{ // arrays built from arrays
		fixed("$concatArrays", 0, -1, evalConcatArrays),
		special("$filter", compileMapFilter),
		special("$map", compileMapFilter),
		fixed("$range", 2, 3, evalRange),
		special("$reduce", compileReduce),
		fixed("$reverseArray", 1, 1, evalReverseArray),
		special("$sortArray", compileSortArray),
		named("$zip", []string{"inputs", "useLongestLength", "defaults"}, []string{"inputs"}, evalZip),
	},
	{ // sets
		fixed("$allElementsTrue", 1, 1, elementsTrue("$allElementsTrue", false)),
		fixed("$anyElementTrue", 1, 1, elementsTrue("$anyElementTrue", true)),
		fixed("$setDifference", 2, 2, setOp("$setDifference")),
		fixed("$setEquals", 2, -1, setOp("$setEquals")),
		fixed("$setIntersection", 0, -1, setOp("$setIntersection")),
		fixed("$setIsSubset", 2, 2, setOp("$setIsSubset")),
		fixed("$setUnion", 0, -1, setOp("$setUnion")),
	},
	{ // objects
		fixed("$arrayToObject", 1, 1, evalArrayToObject),
		special("$getField", compileFieldAccess),
		fixed("$mergeObjects", 0, -1, evalMergeObjects),
		fixed("$objectToArray", 1, 1, evalObjectToArray),
		special("$setField", compileFieldAccess),
	},
	{ // strings
		fixed("$concat", 0, -1, evalConcat),
		named("$ltrim", []string{"input", "chars"}, []string{"input"}, trimFunc("$ltrim")),
		named("$rtrim", []string{"input", "chars"}, []string{"input"}, trimFunc("$rtrim")),
		fixed("$split", 2, 2, evalSplit),
		fixed("$strcasecmp", 2, 2, evalStrcasecmp),
		fixed("$toLower", 1, 1, caseMap("$toLower", strings.ToLower)),
		fixed("$toUpper", 1, 1, caseMap("$toUpper", strings.ToUpper)),
		named("$trim", []string{"input", "chars"}, []string{"input"}, trimFunc("$trim")),
	},
	{ // substrings
		fixed("$indexOfBytes", 2, 4, indexOfFunc("$indexOfBytes", false)),
		fixed("$indexOfCP", 2, 4, indexOfFunc("$indexOfCP", true)),
		named("$replaceAll", []string{"input", "find", "replacement"}, []string{"input", "find", "replacement"}, replaceFunc("$replaceAll", -1)),
		named("$replaceOne", []string{"input", "find", "replacement"}, []string{"input", "find", "replacement"}, replaceFunc("$replaceOne", 1)),
		fixed("$strLenBytes", 1, 1, evalStrLen("$strLenBytes", false)),
		fixed("$strLenCP", 1, 1, evalStrLen("$strLenCP", true)),
		fixed("$substr", 3, 3, evalSubstrBytes),
		fixed("$substrBytes", 3, 3, evalSubstrBytes),
		fixed("$substrCP", 3, 3, evalSubstrCP),
	},
	{ // regular expressions
		named("$regexFind", []string{"input", "regex", "options"}, []string{"input", "regex"}, regexFunc("$regexFind")),
		named("$regexFindAll", []string{"input", "regex", "options"}, []string{"input", "regex"}, regexFunc("$regexFindAll")),
		named("$regexMatch", []string{"input", "regex", "options"}, []string{"input", "regex"}, regexFunc("$regexMatch")),
	},
	{ // calendar parts of a date
		datePart("$dayOfMonth", time.Time.Day),
		datePart("$dayOfWeek", dayOfWeekOf),
		datePart("$dayOfYear", time.Time.YearDay),
		datePart("$isoDayOfWeek", isoDayOfWeekOf),
		datePart("$isoWeek", isoWeekOf),
		datePart("$isoWeekYear", isoWeekYearOf),
		datePart("$month", monthOf),
		datePart("$week", weekOf),
		datePart("$year", time.Time.Year),
	},
	{ // time of day
		datePart("$hour", time.Time.Hour),
		datePart("$millisecond", millisecondOf),
		datePart("$minute", time.Time.Minute),
		datePart("$second", time.Time.Second),
	},
	{ // dates
		named("$dateAdd", []string{"startDate", "unit", "amount", "timezone"}, []string{"startDate", "unit", "amount"}, dateAddFunc(1)),
		named("$dateDiff", []string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}, []string{"startDate", "endDate", "unit"}, evalDateDiff),
		named("$dateFromParts", []string{"year", "month", "day", "hour", "minute", "second", "millisecond", "isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone"}, nil, evalDateFromParts),
		named("$dateFromString", []string{"dateString", "format", "timezone", "onError", "onNull"}, []string{"dateString"}, evalDateFromString),
		named("$dateSubtract", []string{"startDate", "unit", "amount", "timezone"}, []string{"startDate", "unit", "amount"}, dateAddFunc(-1)),
		named("$dateToParts", []string{"date", "timezone", "iso8601"}, []string{"date"}, evalDateToParts),
		named("$dateToString", []string{"date", "format", "timezone", "onNull"}, []string{"date"}, evalDateToString),
		named("$dateTrunc", []string{"date", "unit", "binSize", "timezone", "startOfWeek"}, []string{"date", "unit"}, evalDateTrunc),
	},
	{ // accumulators folding their arguments (or one array's elements)
		fixed("$avg", 1, -1, foldArgs(newAvgAcc, true)),
		fixed("$max", 1, -1, foldArgs(newMaxAcc, true)),
		fixed("$min", 1, -1, foldArgs(newMinAcc, true)),
		fixed("$stdDevPop", 1, -1, foldArgs(newStdDevPopAcc, true)),
		fixed("$stdDevSamp", 1, -1, foldArgs(newStdDevSampAcc, true)),
		fixed("$sum", 1, -1, foldArgs(newSumAcc, true)),
	},
	{ // accumulators keeping several values, over an array
		special("$firstN", compileNExpr),
		special("$lastN", compileNExpr),
		special("$maxN", compileNExpr),
		special("$median", compilePercentileExpr),
		special("$minN", compileNExpr),
		special("$percentile", compilePercentileExpr),
	},
	{ // server-side JavaScript (expr_function.go)
		jsOp("$function", compileFunction),
	},
}

// exprEntry is one row of exprTable.
type exprEntry struct {
	name string
	op   exprOp
}

// exprOp describes an operator: either a compile function for operators
// with their own argument shape, or an evaluator over positional
// arguments with an arity range (max -1: unbounded); js marks the
// JavaScript operators, which validators refuse.
type exprOp struct {
	compile  specialCompiler
	fn       positionalFunc
	min, max int
	js       bool
}

// specialCompiler compiles an operator with its own argument syntax.
type specialCompiler func(name string, arg bsoncore.Value, s *compileScope) (Expr, error)

// positionalFunc evaluates an operator over its evaluated arguments.
type positionalFunc func(c *evalCtx, args []bsoncore.Value) (bsoncore.Value, error)

// namedFunc evaluates an operator over its evaluated named arguments.
type namedFunc func(c *evalCtx, a namedArgs) (bsoncore.Value, error)

// fixed is an operator evaluated over min to max positional arguments
// (max -1: unbounded).
func fixed(name string, min, max int, fn positionalFunc) exprEntry {
	return exprEntry{name, exprOp{fn: fn, min: min, max: max}}
}

// special is an operator with its own argument syntax.
func special(name string, compile specialCompiler) exprEntry {
	return exprEntry{name, exprOp{compile: compile}}
}

// named is an operator over an object of named arguments: allowed lists
// them, required those that must be present.
func named(name string, allowed, required []string, fn namedFunc) exprEntry {
	return special(name, compileNamed(allowed, required, fn))
}

// jsOp is an operator mongod runs as server-side JavaScript.
func jsOp(name string, compile specialCompiler) exprEntry {
	return exprEntry{name, exprOp{compile: compile, js: true}}
}

func (e exprEntry) rowName() string { return e.name }

// exprOps finds exprTable's rows by name. It is filled in init because the
// compile functions recurse into it.
var exprOps map[string]exprEntry

func init() { exprOps = indexTable(exprTable) }
