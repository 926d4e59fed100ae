package storage

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/prolly"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"github.com/dolthub/dolt/go/store/val"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Merge modes, a collection's option mergeMode: what a document changed
// on both sides of a merge must have in common to conflict.
const (
	// MergeFieldDivergent (the default): a field changed on both sides to
	// different values.
	MergeFieldDivergent = "fieldDivergent"
	// MergeFieldTouched: a field changed on both sides, even to the same
	// value (compare-and-swap on a version field stays safe).
	MergeFieldTouched = "fieldTouched"
	// MergeDocumentTouched: the document changed on both sides.
	MergeDocumentTouched = "documentTouched"
	// MergeDocumentDivergent: the document changed on both sides, with
	// different results.
	MergeDocumentDivergent = "documentDivergent"
)

// MergeModes are the values mergeMode takes.
var MergeModes = []string{MergeFieldDivergent, MergeFieldTouched, MergeDocumentTouched, MergeDocumentDivergent}

// mergeModeOf is a collection's merge mode.
func mergeModeOf(info CollectionInfo) string {
	if m, ok := info.Options.Lookup("mergeMode").StringValueOK(); ok {
		return m
	}
	return MergeFieldDivergent
}

// fieldLevel reports a mode that merges documents field by field.
func fieldLevel(mode string) bool { return mode == MergeFieldDivergent || mode == MergeFieldTouched }

// touched reports a mode for which the same change on both sides
// conflicts.
func touched(mode string) bool { return mode == MergeFieldTouched || mode == MergeDocumentTouched }

// convergentConflicts finds, for the touched modes, the documents both
// sides changed to the same result, which a merge of the maps takes
// without asking: each is a conflict (ours stays, as merged already holds).
func (d *Database) convergentConflicts(ctx context.Context, base, ours, theirs prolly.Map) ([]conflictRec, error) {
	var recs []conflictRec
	err := prolly.DiffMaps(ctx, base, ours, false, func(ctx context.Context, df tree.Diff) error {
		if df.To == nil {
			return nil // a deletion on both sides changes no field
		}
		var theirVal val.Tuple
		err := theirs.Get(ctx, val.Tuple(df.Key), func(_, v val.Tuple) error { theirVal = v; return nil })
		if err != nil || theirVal == nil || !bytes.Equal(theirVal, df.To) {
			return err
		}
		rec := conflictRec{key: append([]byte(nil), keyBytes(val.Tuple(df.Key))...)}
		if df.From != nil {
			if rec.base, err = d.docOf(ctx, df.From); err != nil {
				return err
			}
		}
		if rec.ours, err = d.docOf(ctx, df.To); err != nil {
			return err
		}
		rec.theirs = rec.ours
		recs = append(recs, rec)
		return nil
	})
	if !errors.Is(err, io.EOF) {
		return nil, err
	}
	return recs, nil
}

// mergeDocsTouched is mergeDocs for fieldTouched: a field changed on both
// sides conflicts even when both made the same change.
func mergeDocsTouched(base, ours, theirs bsoncore.Document) (bsoncore.Document, bool) {
	return mergeDocsBy(base, ours, theirs, true)
}

// dryThreeWay merges as applyThreeWay would and reports the conflicts per
// collection, storing nothing.
func (d *Database) dryThreeWay(ctx context.Context, base *rootState, b *branch, theirC *datas.Commit, nameIDs int, res *MergeResult) error {
	theirs, err := d.commitState(ctx, theirC)
	if err != nil {
		return err
	}
	merged, err := d.threeWay(ctx, base, b.state.Load(), theirs, recordConflicts)
	if err != nil {
		return err
	}
	res.Conflicts = map[string]int{}
	res.ConflictIDs = map[string][]bsoncore.Value{}
	for coll, m := range merged.conflicts {
		n, _ := m.Count()
		res.Conflicts[coll] = n
		if res.ConflictIDs[coll], err = d.firstConflictIDs(ctx, coll, m, nameIDs); err != nil {
			return err
		}
	}
	return nil
}

// firstConflictIDs are the _ids of the first n conflicts of a
// collection's conflicts map, in _id order.
func (d *Database) firstConflictIDs(ctx context.Context, coll string, m prolly.Map, n int) ([]bsoncore.Value, error) {
	if n <= 0 {
		return nil, nil
	}
	cs, err := d.readConflicts(ctx, coll, m, n, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]bsoncore.Value, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids, nil
}
