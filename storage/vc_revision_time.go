package storage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/dolt/go/store/datas"
)

// Revisions by time: "<ref>@{<time>}" names the newest commit of ref at or
// before the time, "@{<time>}" alone the current branch's, like Git's
// "@{date}". DumboDB keeps no reflog, so "newest" is by the graph, not
// the clock: the walk goes down the first-parent chain from the ref's head
// and stops at the first commit whose time is at or before the one asked.
// A commit made with a clock behind its parent's is found where the chain
// puts it, and of commits with equal times the one nearer the head wins.

// timeLayouts are the times a revision may name: RFC 3339 with or without
// fractions, and without a zone or a time (UTC, midnight).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"}

// splitAtTime splits "base@{time}"; timed is false for a spec without one.
func splitAtTime(spec string) (base string, at time.Time, timed bool, err error) {
	i := strings.LastIndex(spec, "@{")
	switch {
	case !strings.HasSuffix(spec, "}"):
		return spec, time.Time{}, false, nil
	case i < 0 && strings.HasPrefix(spec, "{"): // db@{time}: the "@" went with the database's name
		i = -1
	case i < 0:
		return spec, time.Time{}, false, nil
	}
	text := spec[i+2 : len(spec)-1]
	for _, layout := range timeLayouts {
		if at, err = time.Parse(layout, text); err == nil {
			return spec[:max(i, 0)], at, true, nil
		}
	}
	return "", time.Time{}, false, fmt.Errorf("%w: %q is no time (RFC 3339, as 2026-12-01T10:00:00Z)", ErrRevisionNotFound, text)
}

// commitAtTime walks c's first parents down to the first commit made at
// or before at.
func (d *Database) commitAtTime(ctx context.Context, c *datas.Commit, at time.Time) (*datas.Commit, error) {
	limit := at.UnixMilli()
	for {
		if commitTime(ctx, c) <= limit {
			return c, nil
		}
		parents, err := datas.GetCommitParents(ctx, d.vs, c.NomsValue())
		if err != nil {
			return nil, err
		}
		if len(parents) == 0 {
			return nil, fmt.Errorf("%w: no commit at or before %s", ErrRevisionNotFound, at.UTC().Format(time.RFC3339))
		}
		c = parents[0]
	}
}
