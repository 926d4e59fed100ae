// Package js owns DumboDB's server-side JavaScript: the embedded engine
// (github.com/dop251/goja) that $where, $function, $accumulator and
// mapReduce run user code in. It compiles a function's source once
// (Compile), runs it in a pooled runtime (Engine.Call, Session), converts
// values between BSON and JavaScript as mongod's shell types do (ObjectId,
// NumberLong, NumberDecimal, BinData, Timestamp, MinKey/MaxKey, Date,
// RegExp) and bounds every call in time and in memory (watch.go: one
// goroutine interrupts a call past its deadline or its heap growth; and a
// cap on the values that leave the engine).
// Errors are mongod's: JSInterpreterFailure for what user code throws,
// Interrupted when a call runs out of time. It knows nothing of queries:
// the query package decides what runs and when;
// docs/design/javascript.md describes the whole.
package js
