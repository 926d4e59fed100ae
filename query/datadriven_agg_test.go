package query

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/value"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// runAggregate runs an "aggregate <pipeline>" case over the current docs.
// Besides the common option lines it takes:
//
//	coll <name> <json array>   a collection $lookup & co. can read
//	allowDiskUse               lets blocking stages exceed memoryLimit
//	memoryLimit <bytes>        the per-stage budget (default 100 MB)
//	collectionless             compiles as {aggregate: 1}
func runAggregate(t *testing.T, c *ddCase, docs []bsoncore.Document) []string {
	cat := memCatalog{}
	opts := PipelineOptions{DB: "test", Collection: "c", Catalog: cat}
	var common []string
	for _, l := range c.input {
		name, arg, _ := strings.Cut(l, " ")
		switch name {
		case "coll":
			cname, arr, _ := strings.Cut(arg, " ")
			cat[cname] = []bsoncore.Document{}
			for _, v := range value.ArrayValues(mustValue(t, arr).Data) {
				cat[cname] = append(cat[cname], v.Data)
			}
		case "allowDiskUse":
			opts.AllowDiskUse = true
		case "memoryLimit":
			n, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			opts.MemoryLimit = n
		case "collectionless":
			opts.Collectionless = true
		default:
			common = append(common, l)
		}
	}
	o, err := parseOptions(t, common)
	if err != nil {
		return []string{errString(err)}
	}
	opts.Env = o.env
	p, err := CompilePipelineOpts(mustValue(t, c.args).Data, opts)
	if err != nil {
		return []string{errString(err)}
	}
	in := docs
	if opts.Collectionless {
		in = nil
	}
	out, err := Drain(context.Background(), p.Run(NewSliceStream(append([]bsoncore.Document(nil), in...))))
	if err != nil {
		return []string{errString(err)}
	}
	lines := []string{}
	for _, d := range out {
		lines = append(lines, typedDoc(d))
	}
	return lines
}

// memCatalog is a Catalog over in-memory collections.
type memCatalog map[string][]bsoncore.Document

func (m memCatalog) Scan(_ context.Context, coll string) (Stream, error) {
	return NewSliceStream(append([]bsoncore.Document(nil), m[coll]...)), nil
}

func (m memCatalog) Count(_ context.Context, coll string) (int64, bool, error) {
	docs, ok := m[coll]
	return int64(len(docs)), ok, nil
}
