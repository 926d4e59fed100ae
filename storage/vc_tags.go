package storage

import (
	"context"
	"fmt"

	"github.com/dolthub/dolt/go/store/datas"
)

// TagInfo describes a tag.
type TagInfo struct {
	Name    string
	Commit  string
	Message string
}

// CreateTag tags a revision's commit.
func (d *Database) CreateTag(ctx context.Context, name string, at Revision, message string) (TagInfo, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return TagInfo{}, err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return TagInfo{}, err
	}
	defer d.release()
	if !ValidRefName(name) {
		return TagInfo{}, fmt.Errorf("%w: %q", ErrInvalidRefName, name)
	}
	c, err := d.revisionCommit(ctx, at)
	if err != nil {
		return TagInfo{}, err
	}
	ds, err := d.refDataset(ctx, refTags, name)
	if err != nil {
		return TagInfo{}, err
	}
	if ds.HasHead() {
		return TagInfo{}, fmt.Errorf("%w: %s", ErrTagExists, name)
	}
	if err := checkMetaSize(message, d.engine.opts.Author); err != nil {
		return TagInfo{}, err
	}
	tname, email, _ := splitAuthor(d.engine.opts.Author) // checked by Open
	if _, err := d.db.Tag(ctx, ds, c.Addr(), datas.TagOptions{Meta: datas.NewTagMeta(tname, email, message)}); err != nil {
		return TagInfo{}, err
	}
	d.engine.panics.at("vc.ref")
	return TagInfo{Name: name, Commit: c.Addr().String(), Message: message}, nil
}

// DeleteTag removes a tag.
func (d *Database) DeleteTag(ctx context.Context, name string) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	if err := d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	ds, err := d.refDataset(ctx, refTags, name)
	if err != nil {
		return err
	}
	if !ds.HasHead() {
		return fmt.Errorf("%w: %s", ErrTagNotFound, name)
	}
	_, err = d.db.Delete(ctx, ds, "")
	return err
}

// Tags lists the tags.
func (d *Database) Tags(ctx context.Context) ([]TagInfo, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	return d.tagInfos(ctx)
}

// tagInfos lists the tags of an open store.
func (d *Database) tagInfos(ctx context.Context) ([]TagInfo, error) {
	names, err := d.refNames(ctx, refTags)
	if err != nil {
		return nil, err
	}
	out := make([]TagInfo, 0, len(names))
	for _, n := range names {
		ds, err := d.refDataset(ctx, refTags, n)
		if err != nil {
			return nil, err
		}
		meta, addr, err := ds.HeadTag()
		if err != nil {
			return nil, err
		}
		out = append(out, TagInfo{Name: n, Commit: addr.String(), Message: meta.Description})
	}
	return out, nil
}
