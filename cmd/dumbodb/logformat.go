package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// mongod's log shape (docs/operations.md, "Logs"): each line
//
//	{"t":{"$date":"2026-12-07T04:00:00.000+00:00"},"s":"I","c":"NETWORK","id":22943,
//	 "ctx":"conn12","msg":"Connection accepted","attr":{...}}
//
// The server logs through zerolog with flat fields (t, s, c, ctx, msg and
// the attributes); mongodLog rewrites each line into that shape as it is
// written, so that log pipelines built for mongod read DumboDB's.

// mongodIDs are mongod's ids of the messages DumboDB logs as mongod does.
var mongodIDs = map[string]int{
	"Connection accepted":     22943,
	"Connection ended":        22944,
	"client metadata":         51800,
	"Slow query":              51803,
	"Waiting for connections": 23016,
}

// ownIDBase begins the ids of DumboDB's own messages: a stable number
// for each message text, above mongod's.
const ownIDBase = 90_000_000

// messageID is a message's id: mongod's, or its own stable one.
func messageID(msg string) int {
	if id, ok := mongodIDs[msg]; ok {
		return id
	}
	h := fnv.New32a()
	h.Write([]byte(msg))
	return ownIDBase + int(h.Sum32()%10_000_000)
}

// defaultCtx names the thread a line without one comes from, by its
// component, as mongod's names go.
var defaultCtx = map[string]string{"NETWORK": "listener", "STORAGE": "checkpointer", "REPL": "replica"}

// logLevels is what the log keeps of debug lines: those up to the
// verbosity of their component (by the code in "c"), or the global one
// for a component without its own.
type logLevels struct {
	global     int
	components map[string]int
}

var currentLevels atomic.Pointer[logLevels]

// setLogLevels sets the verbosities (setParameter logLevel and
// logComponentVerbosity): zerolog drops lines above the highest before
// they are built, the writer those above their component's.
func setLogLevels(global int, components map[string]int) {
	highest := global
	for _, n := range components {
		highest = max(highest, n)
	}
	currentLevels.Store(&logLevels{global: global, components: components})
	zerolog.SetGlobalLevel(logLevel(highest))
}

// kept reports whether a line of severity s ("I", "D1", ...) and
// component comp is written.
func (l *logLevels) kept(s, comp string) bool {
	if l == nil || len(s) != 2 || s[0] != 'D' {
		return true
	}
	n, ok := l.components[comp]
	if !ok {
		n = l.global
	}
	return int(s[1]-'0') <= n
}

// mongodLog writes each line zerolog writes to out in mongod's shape;
// a line it cannot read goes through as it is.
type mongodLog struct{ out io.Writer }

func (w mongodLog) Write(p []byte) (int, error) {
	line, err := mongodLine(p)
	if err != nil {
		line = p
	}
	if line == nil {
		return len(p), nil // above its component's verbosity
	}
	if _, err := w.out.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

type logField struct {
	key string
	val json.RawMessage
}

// mongodLine rewrites one zerolog line.
func mongodLine(p []byte) ([]byte, error) {
	fields, err := readFields(p)
	if err != nil {
		return nil, err
	}
	// A line logged without s, c or msg (zerolog leaves out a missing
	// level and an empty message) gets mongod's defaults, not a field
	// without a value, which would not be JSON.
	top := map[string]json.RawMessage{"s": json.RawMessage(`"I"`), "c": json.RawMessage(`"-"`), "msg": json.RawMessage(`""`)}
	var attr []logField
	for _, f := range fields {
		switch f.key {
		case "t", "s", "c", "ctx", "msg":
			top[f.key] = f.val
		default:
			attr = append(attr, logField{f.key, attrValue(f.val)})
		}
	}
	var msg, comp, ts, sev string
	json.Unmarshal(top["msg"], &msg)
	json.Unmarshal(top["c"], &comp)
	json.Unmarshal(top["s"], &sev)
	if !currentLevels.Load().kept(sev, comp) {
		return nil, nil
	}
	json.Unmarshal(top["t"], &ts)
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, err
	}
	ctx := top["ctx"]
	if ctx == nil {
		name := defaultCtx[comp]
		if name == "" {
			name = "initandlisten"
		}
		ctx, _ = json.Marshal(name)
	}
	var b bytes.Buffer
	b.WriteString(`{"t":{"$date":"` + at.UTC().Format("2006-01-02T15:04:05.000+00:00") + `"},"s":`)
	b.Write(top["s"])
	b.WriteString(`,"c":`)
	b.Write(top["c"])
	b.WriteString(`,"id":` + strconv.Itoa(messageID(msg)) + `,"ctx":`)
	b.Write(ctx)
	b.WriteString(`,"msg":`)
	b.Write(top["msg"])
	if len(attr) > 0 {
		b.WriteString(`,"attr":{`)
		for i, f := range attr {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(f.key)
			b.Write(k)
			b.WriteByte(':')
			b.Write(f.val)
		}
		b.WriteByte('}')
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// readFields reads a JSON object's fields in their order.
func readFields(p []byte) ([]logField, error) {
	dec := json.NewDecoder(bytes.NewReader(p))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var fields []logField
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		fields = append(fields, logField{key, val})
	}
	return fields, nil
}

// attrValue is a field's value in attr: a string holding a JSON object
// (client metadata) becomes that object.
func attrValue(v json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(v, &s) != nil || len(s) < 2 || s[0] != '{' || !json.Valid([]byte(s)) {
		return v
	}
	var compact bytes.Buffer
	if json.Compact(&compact, []byte(s)) != nil {
		return v
	}
	return compact.Bytes()
}
