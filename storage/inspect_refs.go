package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dumbodb/dumbodb/storage/wal"
)

// inspectBranches reports every branch's head and working root.
func (d *Database) inspectBranches(ctx context.Context, rep *DatabaseReport) error {
	names, err := d.branchNames(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		br, err := d.inspectBranch(ctx, name)
		if err != nil {
			return fmt.Errorf("branch %s: %w", name, err)
		}
		rep.Branches = append(rep.Branches, br)
	}
	return nil
}

func (d *Database) inspectBranch(ctx context.Context, name string) (BranchReport, error) {
	br := BranchReport{Name: name}
	head, err := d.refDataset(ctx, refHeads, name)
	if err != nil {
		return br, err
	}
	addr, _ := head.MaybeHeadAddr()
	br.Head = addr.String()
	headRoot, err := d.headRootRef(ctx, head)
	if err != nil {
		return br, err
	}
	_, rootAddr, lsn, err := d.workingRoot(ctx, name, headRoot)
	if err != nil {
		return br, err
	}
	br.WorkingLSN = lsn
	st, err := loadRootState(ctx, d.ns, rootAddr)
	if err != nil {
		return br, err
	}
	if br.RootVersion, err = rootVersion(ctx, d.ns, st.root); err != nil {
		return br, err
	}
	br.Merging = st.hasMerge()
	for _, n := range st.collectionNames() {
		cr, err := inspectCollection(st.colls.get(n))
		if err != nil {
			return br, fmt.Errorf("collection %s: %w", n, err)
		}
		br.Collections = append(br.Collections, cr)
	}
	return br, nil
}

func inspectCollection(c *collection) (CollectionReport, error) {
	cr := CollectionReport{Name: c.info.Name, Kind: "collection", Documents: c.count, Map: c.base.HashOf().String()}
	switch {
	case c.info.IsView():
		cr.Kind = "view"
	case c.capped != nil:
		cr.Kind = "capped"
	}
	for _, ix := range c.indexes {
		n, err := ix.base.Count()
		if err != nil {
			return cr, err
		}
		cr.Indexes = append(cr.Indexes, IndexReport{Name: ix.spec.Name, Key: ix.spec.Key, Entries: n,
			Map: ix.base.HashOf().String()})
	}
	return cr, nil
}

// inspectTags reports every tag.
func (d *Database) inspectTags(ctx context.Context, rep *DatabaseReport) error {
	tags, err := d.tagInfos(ctx)
	for _, t := range tags {
		rep.Tags = append(rep.Tags, TagReport{Name: t.Name, Commit: t.Commit})
	}
	return err
}

// inspectLog reports the database's write-ahead log, segment by segment
// and record by record; a database closed cleanly has none.
func (d *Database) inspectLog(rep *DatabaseReport) error {
	dir := filepath.Join(d.dir, walDirName)
	if !exists(dir) {
		return nil
	}
	segs, err := wal.Inspect(dir, func(lsn uint64, payload []byte) {
		rep.Records = append(rep.Records, RecordReport{LSN: lsn, Bytes: len(payload), Summary: summarizeRecord(payload)})
	})
	rep.WAL = segs
	return err
}

// summarizeRecord says what a log record holds: its branch, its
// operations by kind and collection, and its marks.
func summarizeRecord(payload []byte) string {
	rec, err := decodeRecord(payload)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	var parts []string
	count, order := map[string]int{}, []string{}
	for _, op := range rec.ops {
		k := op.op + " " + op.coll
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s x%d", k, count[k]))
	}
	if rec.mark != "" {
		parts = append(parts, fmt.Sprintf("mark %s %x", rec.mark, rec.txn[:]))
	}
	if rec.retry != nil {
		parts = append(parts, "retry outcomes")
	}
	return fmt.Sprintf("branch %s: %s", rec.branch, strings.Join(parts, ", "))
}
