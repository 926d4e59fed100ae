package storage

import (
	"context"
	"errors"
	"io"

	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/dumbodb/dumbodb/index"
	"github.com/dumbodb/dumbodb/value"
)

// validatorClashes keeps ours, and records a conflict, for every document
// the merge changed (one of theirs, or merged field by field) that the
// merged validator refuses: a merge writes documents, and a write must
// pass the collection's validator as on mongod (docs/design/validators.md,
// "Merges"). Ours' documents the merge leaves alone are not checked, as a
// collMod does not check existing documents. validationLevel off and
// validationAction warn check nothing; moderate checks only documents
// that were valid on our side or new there.
func (d *Database) validatorClashes(ctx context.Context, info CollectionInfo,
	baseMap, oursMap, theirsMap, merged prolly.Map) (prolly.Map, []conflictRec, error) {
	v, moderate, err := mergeValidator(info.Options)
	if err != nil || v == nil || merged.HashOf() == oursMap.HashOf() {
		return merged, nil, err
	}
	var refused []conflictRec
	err = prolly.DiffMaps(ctx, oursMap, merged, false, func(ctx context.Context, df tree.Diff) error {
		doc, err := diffDoc(ctx, d.ns, df.To)
		if err != nil || doc == nil || v.Match(doc) {
			return err // a deletion needs no check
		}
		ours, err := diffDoc(ctx, d.ns, df.From)
		if err != nil || (moderate && ours != nil && !v.Match(ours)) {
			return err
		}
		refused = append(refused, conflictRec{key: append([]byte(nil), keyBytes(val.Tuple(df.Key))...), ours: ours})
		return nil
	})
	if !errors.Is(err, io.EOF) { // DiffMaps ends with io.EOF
		return merged, nil, err
	}
	if len(refused) == 0 {
		return merged, nil, nil
	}
	ed := newEdits()
	for i := range refused {
		rec := &refused[i]
		ed.ReplaceOrInsert(&edit{key: rec.key, value: rec.ours}) // nil: ours had none
		if rec.base, err = lookupCopy(ctx, d, baseMap, rec.key); err != nil {
			return merged, nil, err
		}
		if rec.theirs, err = lookupCopy(ctx, d, theirsMap, rec.key); err != nil {
			return merged, nil, err
		}
	}
	merged, err = foldEdits(ctx, d.ns, &collection{base: merged, edits: ed}, d.largeDoc())
	return merged, refused, err
}

// mergeValidator compiles the validator a merge checks documents against
// (nil: none checks anything) and reports whether its level is moderate.
func mergeValidator(opts bsoncore.Document) (index.Matcher, bool, error) {
	doc, ok := opts.Lookup("validator").DocumentOK()
	level, _ := opts.Lookup("validationLevel").StringValueOK()
	action, _ := opts.Lookup("validationAction").StringValueOK()
	if !ok || len(doc) <= 5 || level == "off" || action == "warn" {
		return nil, false, nil
	}
	var coll *value.Collation
	if c, ok := opts.Lookup("collation").DocumentOK(); ok {
		var err error
		if coll, err = value.ParseCollation(c); err != nil {
			return nil, false, err
		}
	}
	v, err := compileValidator(doc, coll)
	return v, level == "moderate", err
}

// lookupCopy is the document of key in m, copied (nil: none).
func lookupCopy(ctx context.Context, d *Database, m prolly.Map, key []byte) ([]byte, error) {
	v, found, err := lookup(ctx, d.ns, m, nil, key)
	if err != nil || !found {
		return nil, err
	}
	return append([]byte(nil), v...), nil
}
