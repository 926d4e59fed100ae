package storage

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/prolly/tree"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Dropped collections kept for undrop (docs/format/undrop.md, "Dropped
// collections"): a commit of the branch's working root from just before
// the drop, named by a refs/dropped/ ref.

const (
	refDropped = "refs/dropped/"
	// bucketsPrefix names a time-series collection's bucket collection.
	bucketsPrefix = "system.buckets."
)

// DroppedCollection is a collection drop kept for undrop.
type DroppedCollection struct {
	DB, Name  string
	Branch    string // the branch it was dropped from
	By        string
	DroppedAt time.Time
	Documents int64
	Bytes     int64 // its documents' size in the tree when dropped
	ref       string
	commit    hash.Hash
}

// ErrCollectionNotDropped: no dropped collection of that name is kept.
var ErrCollectionNotDropped = errors.New("no dropped collection of that name is kept")

// dropDescPrefix begins a kept drop's commit description.
const dropDescPrefix = "dropped collection "

// KeepDroppedCollection keeps collection coll of branch, and its bucket
// collection when it is a time-series collection, for undrop: called
// before the drop. It does nothing without a retention or when the
// collection does not exist.
func (d *Database) KeepDroppedCollection(ctx context.Context, branchName, coll, by string) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if d.engine.opts.UndropRetention <= 0 {
		return nil
	}
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	if s, err := d.SnapshotAt(ctx, Revision{Branch: branchName}); err != nil {
		return err
	} else if _, ok := s.Collection(coll); !ok {
		return nil // nothing to keep: no checkpoint for a drop of nothing
	}
	return d.lockedBranch(ctx, branchName, func(b *branch) error {
		st := b.state.Load()
		if _, ok := st.colls.lookup(coll); !ok {
			return nil
		}
		clean, err := withoutMerge(ctx, d.ns, st)
		if err != nil {
			return err
		}
		rootVal := tree.ValueFromNode(clean.root.Node())
		if _, err := d.vs.WriteValue(ctx, rootVal); err != nil {
			return err
		}
		now := time.Now()
		meta, err := datas.NewCommitMetaWithUserTS(cmp.Or(by, "dumbodb"), "dumbodb@localhost",
			fmt.Sprintf("%s%s from branch %s", dropDescPrefix, coll, branchName), now)
		if err != nil {
			return err
		}
		ds, err := d.db.GetDataset(ctx, fmt.Sprintf("%s%d-%s", refDropped, now.UnixNano(), hex.EncodeToString([]byte(coll))))
		if err != nil {
			return err
		}
		hds, err := d.refDataset(ctx, refHeads, branchName)
		if err != nil {
			return err
		}
		headAddr, _ := hds.MaybeHeadAddr()
		_, err = d.db.Commit(ctx, ds, rootVal, datas.CommitOptions{Parents: []hash.Hash{headAddr}, Meta: meta})
		return err
	})
}

// DroppedCollections lists the collection drops the database keeps,
// newest first, after removing those past the retention.
func (d *Database) DroppedCollections(ctx context.Context) ([]DroppedCollection, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	refs, err := datasetRefs(ctx, d.db, refDropped)
	if err != nil {
		return nil, err
	}
	var out []DroppedCollection
	for id, addr := range refs {
		dc, err := d.droppedCollection(ctx, id, addr)
		if err != nil {
			return nil, err
		}
		if d.engine.opts.UndropRetention > 0 && time.Since(dc.DroppedAt) > d.engine.opts.UndropRetention {
			if err := d.deleteRef(ctx, dc.ref); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, dc)
	}
	slices.SortFunc(out, func(a, b DroppedCollection) int { return b.DroppedAt.Compare(a.DroppedAt) })
	return out, nil
}

// droppedCollection reads the kept drop that ref refs/dropped/<id> names.
func (d *Database) droppedCollection(ctx context.Context, id string, addr hash.Hash) (DroppedCollection, error) {
	dc := DroppedCollection{DB: d.name, ref: refDropped + id, commit: addr}
	ts, hexName, ok := strings.Cut(id, "-")
	name, err := hex.DecodeString(hexName)
	nanos, perr := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || perr != nil {
		return dc, fmt.Errorf("database %s: a dropped collection's ref %q is damaged", d.name, id)
	}
	dc.Name, dc.DroppedAt = string(name), time.Unix(0, nanos)
	c, err := datas.LoadCommitAddr(ctx, d.vs, addr)
	if err != nil {
		return dc, err
	}
	meta, err := datas.GetCommitMeta(ctx, c.NomsValue())
	if err != nil {
		return dc, err
	}
	dc.By = meta.Name
	if dc.By == "dumbodb" {
		dc.By = ""
	}
	_, dc.Branch, _ = strings.Cut(meta.Description, " from branch ")
	if s, err := d.SnapshotAt(ctx, Revision{Commit: addr}); err == nil {
		if n, err := s.Count(dc.Name); err == nil {
			dc.Documents = int64(n)
		}
		dc.Bytes, _ = s.CollectionBytes(ctx, dc.Name)
	}
	return dc, nil
}

func (d *Database) deleteRef(ctx context.Context, id string) error {
	ds, err := d.db.GetDataset(ctx, id)
	if err != nil || !ds.HasHead() {
		return err
	}
	_, err = d.db.Delete(ctx, ds, "")
	return err
}

// newestDrop is the newest kept drop of collection name.
func (d *Database) newestDrop(ctx context.Context, name string) (DroppedCollection, error) {
	all, err := d.DroppedCollections(ctx)
	if err != nil {
		return DroppedCollection{}, err
	}
	for _, dc := range all {
		if dc.Name == name {
			return dc, nil
		}
	}
	return DroppedCollection{}, fmt.Errorf("%w: %s.%s", ErrCollectionNotDropped, d.name, name)
}

// PurgeDroppedCollection removes every kept drop of collection name and
// returns how many there were.
func (d *Database) PurgeDroppedCollection(ctx context.Context, name string) (int, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return 0, err
	}
	defer leave()
	all, err := d.DroppedCollections(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, dc := range all {
		if dc.Name == name {
			if err := d.deleteRef(ctx, dc.ref); err != nil {
				return n, err
			}
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: %s.%s", ErrCollectionNotDropped, d.name, name)
	}
	return n, nil
}

// undropBatch is how many documents one write of an undrop copies.
const undropBatch = 1000

// UndropCollection copies the newest kept drop of collection name into
// collection to of database target's branch (target nil: this database,
// the branch it was dropped from; to "": its name), then forgets the
// drop. The copy keeps the collection's options, UUID and indexes.
// allow checks the branch written before anything is.
func (d *Database) UndropCollection(ctx context.Context, name string, target *Database, to string, allow func(branch string) error) (DroppedCollection, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return DroppedCollection{}, err
	}
	defer leave()
	dc, err := d.newestDrop(ctx, name)
	if err != nil {
		return dc, err
	}
	branch := dc.Branch
	if target == nil || target == d {
		target = d
	} else {
		branch = DefaultBranch
	}
	if err := allow(branch); err != nil {
		return dc, err
	}
	to = cmp.Or(to, name)
	s, err := d.SnapshotAt(ctx, Revision{Commit: dc.commit})
	if err != nil {
		return dc, err
	}
	names := []string{name}
	if _, ok := s.Collection(bucketsPrefix + name); ok {
		names = append(names, bucketsPrefix+name)
	}
	for _, n := range names {
		dest := strings.Replace(n, name, to, 1)
		if err := target.copyCollection(ctx, s, n, branch, dest); err != nil {
			return dc, err
		}
	}
	return dc, d.deleteRef(ctx, dc.ref)
}

// copyCollection copies collection name of snapshot s into collection
// to of branch: created with its options, UUID and indexes, then filled
// in batches (in insertion order for a capped one).
func (d *Database) copyCollection(ctx context.Context, s *Snapshot, name, branch, to string) error {
	info, ok := s.Collection(name)
	if !ok {
		return fmt.Errorf("%w: %s.%s", ErrCollectionNotDropped, d.name, name)
	}
	err := d.WriteBranch(ctx, branch, func(tx *Tx) error {
		if tx.view(to) != nil {
			return fmt.Errorf("%w: %s.%s", ErrNamespaceExists, d.name, to)
		}
		created := info
		created.Name, created.Indexes = to, nil
		if err := tx.createCollection(ctx, created); err != nil || info.IsView() {
			return err
		}
		return tx.SetIndexes(ctx, to, info.Indexes)
	})
	if err != nil || info.IsView() {
		return err
	}
	var it *Iterator
	if info.Capped() {
		it, err = s.NaturalScan(ctx, name, false)
	} else {
		it, err = s.Scan(ctx, name)
	}
	if err != nil {
		return err
	}
	for done := false; !done; {
		var batch []bsoncore.Document
		for len(batch) < undropBatch {
			doc, err := it.Next(ctx)
			if errors.Is(err, io.EOF) {
				done = true
				break
			}
			if err != nil {
				return err
			}
			batch = append(batch, doc)
		}
		if len(batch) == 0 {
			break
		}
		err := d.WriteBranch(ctx, branch, func(tx *Tx) error {
			for _, doc := range batch {
				if err := tx.Insert(ctx, to, doc); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
