package storage

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dumbodb/dumbodb/internal/formatversion"

	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/types"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// History bundles (docs/format/bundle.md): one file holding a database's
// branches, tags and the chunks their commits reach, or, for an
// incremental bundle, the chunks that the refs of an earlier bundle (its
// base) do not reach.

// BundleHeader is what a bundle says of itself.
type BundleHeader struct {
	DB      string
	Created time.Time
	Refs    []BundleRef // sorted by Ref
	Base    []string    // an incremental bundle's base: its refs' addresses
	Chunks  int64       // chunk records that follow the header
	Bytes   int64       // their length
}

// BundleRef is a branch (refs/heads/<b>) or tag (refs/tags/<t>) and the
// address of its commit.
type BundleRef struct{ Ref, Addr string }

// bundlePrefixSize is the bundle's bytes before its header document:
// magic, version, header length and the header's CRC.
const bundlePrefixSize = formatversion.HeaderSize + 8

// maxBundleHeader bounds a header document (one ref is under 200 bytes).
const maxBundleHeader = 16 << 20

// WriteBundle writes the database's history to w as a bundle: every
// branch and tag and the chunks their commits reach, less those that the
// addresses in since (an earlier bundle's refs) reach. GC waits until it
// is written.
func (d *Database) WriteBundle(ctx context.Context, w io.Writer, since []string) (BundleHeader, error) {
	hdr := BundleHeader{DB: d.name, Created: time.Now().UTC().Truncate(time.Millisecond), Base: since}
	base, err := parseAddrs(since)
	if err != nil {
		return hdr, err
	}
	if err := d.hold(ctx); err != nil {
		return hdr, err
	}
	defer d.release()
	if err := d.ensureBorn(ctx); err != nil {
		return hdr, err
	}
	d.compactMu.Lock() // GC would drop what a ref deleted meanwhile reached
	defer d.compactMu.Unlock()
	if hdr.Refs, err = d.bundleRefs(ctx); err != nil {
		return hdr, err
	}
	missing, sizes, err := d.bundleChunks(ctx, hdr.Refs, base)
	if err != nil {
		return hdr, err
	}
	hdr.Chunks = int64(len(missing))
	for _, h := range missing {
		hdr.Bytes += int64(hash.ByteLen + 4 + sizes[h])
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := writeBundleHeader(bw, hdr); err != nil {
		return hdr, err
	}
	if err := writeChunkRecords(ctx, d.cs, missing, bw); err != nil {
		return hdr, err
	}
	return hdr, bw.Flush()
}

// bundleRefs are the database's branches and tags, sorted.
func (d *Database) bundleRefs(ctx context.Context) ([]BundleRef, error) {
	var refs []BundleRef
	for _, prefix := range []string{refHeads, refTags} {
		m, err := datasetRefs(ctx, d.db, prefix)
		if err != nil {
			return nil, err
		}
		for name, addr := range m {
			refs = append(refs, BundleRef{Ref: prefix + name, Addr: addr.String()})
		}
	}
	slices.SortFunc(refs, func(a, b BundleRef) int { return strings.Compare(a.Ref, b.Ref) })
	return refs, nil
}

// bundleChunks walks the chunks refs reach, not below those that base
// reaches, and returns them with their compressed sizes.
func (d *Database) bundleChunks(ctx context.Context, refs []BundleRef, base []hash.Hash) ([]hash.Hash, map[hash.Hash]uint32, error) {
	walk, err := types.WalkAddrsForChunkStore(d.cs)
	if err != nil {
		return nil, nil, err
	}
	everything := func(hs hash.HashSet) (hash.HashSet, error) { return hs, nil }
	had := hash.HashSet{}
	if len(base) > 0 {
		reached, _, _, err := walkLacking(ctx, d.cs, walk, base, everything)
		if errors.Is(err, errChunksAbsent) {
			return nil, nil, fmt.Errorf("%w: the earlier bundle's commits are not all in database %s", ErrBundleBase, d.name)
		}
		if err != nil {
			return nil, nil, err
		}
		had.InsertAll(hash.NewHashSet(reached...))
	}
	notHad := func(hs hash.HashSet) (hash.HashSet, error) {
		out := hash.HashSet{}
		for h := range hs {
			if !had.Has(h) {
				out.Insert(h)
			}
		}
		return out, nil
	}
	addrs := make([]hash.Hash, 0, len(refs))
	for _, r := range refs {
		addrs = append(addrs, hash.Parse(r.Addr))
	}
	missing, sizes, _, err := walkLacking(ctx, d.cs, walk, addrs, notHad)
	return missing, sizes, err
}

// parseAddrs parses commit addresses.
func parseAddrs(ss []string) ([]hash.Hash, error) {
	out := make([]hash.Hash, 0, len(ss))
	for _, s := range ss {
		h, ok := hash.MaybeParse(s)
		if !ok {
			return nil, fmt.Errorf("%w: %q is no commit id", ErrBadBundle, s)
		}
		out = append(out, h)
	}
	return out, nil
}

// writeBundleHeader writes the bundle's prefix and header document.
func writeBundleHeader(w io.Writer, hdr BundleHeader) error {
	doc := bundleHeaderDoc(hdr)
	prefix := formatversion.Bundle.Header()
	var rest [8]byte
	binary.LittleEndian.PutUint32(rest[:4], uint32(len(doc)))
	binary.LittleEndian.PutUint32(rest[4:], crc32.Checksum(doc, castagnoli))
	for _, b := range [][]byte{prefix[:], rest[:], doc} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func bundleHeaderDoc(hdr BundleHeader) bsoncore.Document {
	refs := bsoncore.NewArrayBuilder()
	for _, r := range hdr.Refs {
		refs.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("ref", r.Ref).AppendString("addr", r.Addr).Build())
	}
	b := bsoncore.NewDocumentBuilder().
		AppendString("db", hdr.DB).
		AppendDateTime("created", hdr.Created.UnixMilli()).
		AppendArray("refs", refs.Build())
	if len(hdr.Base) > 0 {
		base := bsoncore.NewArrayBuilder()
		for _, a := range hdr.Base {
			base.AppendString(a)
		}
		b.AppendArray("base", base.Build())
	}
	return b.AppendInt64("chunks", hdr.Chunks).AppendInt64("bytes", hdr.Bytes).Build()
}

// ReadBundleHeader reads and checks a bundle's prefix and header, leaving
// r at its first chunk record.
func ReadBundleHeader(r io.Reader) (BundleHeader, error) {
	var prefix [bundlePrefixSize]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return BundleHeader{}, fmt.Errorf("%w: %v", ErrBadBundle, err)
	}
	if _, err := formatversion.Bundle.ReadHeader(prefix[:]); err != nil {
		if errors.Is(err, formatversion.ErrNoHeader) {
			err = fmt.Errorf("%w: %v", ErrBadBundle, err)
		}
		return BundleHeader{}, err
	}
	n := binary.LittleEndian.Uint32(prefix[formatversion.HeaderSize:])
	if n < 5 || n > maxBundleHeader {
		return BundleHeader{}, fmt.Errorf("%w: a header of %d bytes", ErrBadBundle, n)
	}
	doc := make([]byte, n)
	if _, err := io.ReadFull(r, doc); err != nil {
		return BundleHeader{}, fmt.Errorf("%w: header: %v", ErrBadBundle, err)
	}
	if crc32.Checksum(doc, castagnoli) != binary.LittleEndian.Uint32(prefix[formatversion.HeaderSize+4:]) {
		return BundleHeader{}, fmt.Errorf("%w: the header's CRC does not match", ErrBadBundle)
	}
	return parseBundleHeader(doc)
}

// bundleHeaderFields is the header document as bson decodes it.
type bundleHeaderFields struct {
	DB      string    `bson:"db"`
	Created time.Time `bson:"created"`
	Refs    []struct {
		Ref  string `bson:"ref"`
		Addr string `bson:"addr"`
	} `bson:"refs"`
	Base   []string `bson:"base"`
	Chunks int64    `bson:"chunks"`
	Bytes  int64    `bson:"bytes"`
}

func parseBundleHeader(doc []byte) (BundleHeader, error) {
	var f bundleHeaderFields
	if err := bson.Unmarshal(doc, &f); err != nil {
		return BundleHeader{}, fmt.Errorf("%w: header: %v", ErrBadBundle, err)
	}
	hdr := BundleHeader{DB: f.DB, Created: f.Created.UTC(), Base: f.Base, Chunks: f.Chunks, Bytes: f.Bytes}
	if f.Chunks < 0 || f.Bytes < 0 {
		return hdr, fmt.Errorf("%w: header counts %d chunks of %d bytes", ErrBadBundle, f.Chunks, f.Bytes)
	}
	if _, err := parseAddrs(f.Base); err != nil {
		return hdr, err
	}
	hasMain := false
	for _, r := range f.Refs {
		name, ok := strings.CutPrefix(r.Ref, refHeads)
		if !ok {
			name, ok = strings.CutPrefix(r.Ref, refTags)
		}
		if _, okAddr := hash.MaybeParse(r.Addr); !ok || !okAddr || !ValidRefName(name) {
			return hdr, fmt.Errorf("%w: ref %q at %q", ErrBadBundle, r.Ref, r.Addr)
		}
		hasMain = hasMain || r.Ref == refHeads+DefaultBranch
		hdr.Refs = append(hdr.Refs, BundleRef{Ref: r.Ref, Addr: r.Addr})
	}
	if !hasMain {
		return hdr, fmt.Errorf("%w: it has no branch %s", ErrBadBundle, DefaultBranch)
	}
	return hdr, nil
}

// RestoreBundle restores the bundle r reads into database name. A
// database that does not exist is made from it, with every branch and
// tag of the bundle (an incremental bundle needs the database that holds
// its base). Into one that exists, the bundle applies as a push would:
// each branch moves only forward from its head and only over no
// uncommitted changes, a branch it lacks is made, a tag it has with
// another commit is refused; allow checks each update first. The
// records are read in full and checked before any ref moves.
func (e *Engine) RestoreBundle(ctx context.Context, name string, r io.Reader, allow func(PushUpdate) error) (BundleHeader, []RefUpdate, error) {
	ctx, leave, err := e.gate.enter(ctx)
	if err != nil {
		return BundleHeader{}, nil, err
	}
	defer leave()
	hdr, err := ReadBundleHeader(r)
	if err != nil {
		return hdr, nil, err
	}
	dir := filepath.Join(e.dir, transferCacheDir, fmt.Sprintf("bundle-%d-%d", time.Now().UnixNano(), cloneSeq.Add(1)))
	defer os.RemoveAll(dir)
	if err := e.readBundleRecords(ctx, dir, r, hdr); err != nil {
		return hdr, nil, err
	}
	err = e.cloneTargetFree(name)
	if errors.Is(err, ErrDatabaseExists) {
		updates, err := e.bundleUpdates(ctx, name, hdr)
		if err != nil {
			return hdr, nil, err
		}
		d, err := e.Database(ctx, name, false)
		if err == nil && d == nil {
			err = fmt.Errorf("%w: database %s was dropped meanwhile", ErrNamespaceNotFound, name)
		}
		if err != nil {
			return hdr, nil, err
		}
		lacking := fmt.Errorf("%w: the bundle's commits reach chunks neither it nor database %s holds", ErrBundleBase, name)
		moved, err := d.applyUpdates(ctx, dir, updates, allow, lacking)
		return hdr, moved, err
	}
	if err != nil {
		return hdr, nil, err
	}
	if len(hdr.Base) > 0 {
		return hdr, nil, fmt.Errorf("%w: an incremental bundle restores onto the database that holds its base; %s does not exist", ErrBundleBase, name)
	}
	moved, err := e.restoreBundleAsNew(ctx, name, dir, hdr)
	return hdr, moved, err
}

// readBundleRecords reads the bundle's chunk records, each checked, into
// a new cache in dir, and checks that the bundle ends after them.
func (e *Engine) readBundleRecords(ctx context.Context, dir string, r io.Reader, hdr BundleHeader) error {
	c, err := e.openCacheAt(ctx, dir)
	if err != nil {
		return err
	}
	defer c.cs.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	var rec [hash.ByteLen + 4]byte
	for i := int64(0); i < hdr.Chunks; i++ {
		if _, err := io.ReadFull(br, rec[:]); err != nil {
			return fmt.Errorf("%w: chunk record %d of %d: %v", ErrBadBundle, i+1, hdr.Chunks, err)
		}
		ch, err := readChunkRecord(br, rec)
		if err != nil {
			return fmt.Errorf("%w: chunk record %d of %d: %v", ErrBadBundle, i+1, hdr.Chunks, err)
		}
		if err := c.cs.Put(ctx, ch, noAddrs); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: bytes follow its %d chunk records", ErrBadBundle, hdr.Chunks)
	}
	root, err := c.cs.Root(ctx)
	if err == nil {
		_, err = c.cs.Commit(ctx, root, root)
	}
	return err
}

// bundleUpdates are the ref updates that restore hdr into the existing
// database name: from each branch's head to the bundle's.
func (e *Engine) bundleUpdates(ctx context.Context, name string, hdr BundleHeader) ([]PushUpdate, error) {
	d, err := e.Database(ctx, name, false)
	if err == nil && d == nil {
		err = fmt.Errorf("%w: database %s was dropped meanwhile", ErrNamespaceNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	heads, err := d.branchHeads(ctx)
	if err != nil {
		return nil, err
	}
	var updates []PushUpdate
	for _, ref := range hdr.Refs {
		u := PushUpdate{New: ref.Addr}
		if b, ok := strings.CutPrefix(ref.Ref, refHeads); ok {
			u.Branch = b
			if cur, ok := heads[b]; ok {
				u.Old = cur.String()
			}
		} else {
			u.Tag = strings.TrimPrefix(ref.Ref, refTags)
		}
		updates = append(updates, u)
	}
	return updates, nil
}

// branchHeads maps the database's branches to their heads.
func (d *Database) branchHeads(ctx context.Context) (map[string]hash.Hash, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	if err := d.ensureBorn(ctx); err != nil {
		return nil, err
	}
	return datasetRefs(ctx, d.db, refHeads)
}

// restoreBundleAsNew makes database name from the bundle whose records
// the cache in dir holds.
func (e *Engine) restoreBundleAsNew(ctx context.Context, name, dir string, hdr BundleHeader) ([]RefUpdate, error) {
	heads, tags := map[string]hash.Hash{}, map[string]hash.Hash{}
	for _, ref := range hdr.Refs {
		if b, ok := strings.CutPrefix(ref.Ref, refHeads); ok {
			heads[b] = hash.Parse(ref.Addr)
		} else {
			tags[strings.TrimPrefix(ref.Ref, refTags)] = hash.Parse(ref.Addr)
		}
	}
	c, err := e.openCacheAt(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer c.cs.Close()
	tmp := filepath.Join(e.dir, fmt.Sprintf("%s%d-%d", clonePrefix, time.Now().UnixNano(), cloneSeq.Add(1)))
	res, err := cloneInto(ctx, tmp, c.cs, "", heads, tags)
	if err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: its commits reach chunks it does not hold: %v", ErrBadBundle, err)
	}
	if err == nil {
		err = e.installClone(tmp, name)
	}
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	return res.Updated, nil
}

// RefAddrs returns the addresses of a bundle's refs, sorted and once
// each: what an incremental bundle made after it names as its base.
func (h BundleHeader) RefAddrs() []string {
	out := make([]string, 0, len(h.Refs))
	for _, r := range h.Refs {
		out = append(out, r.Addr)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// BundleFile writes the database's bundle (WriteBundle) to a temporary
// file under the transfer caches and returns it at its start. The file
// has no name: closing it frees its space, and a crash leaves nothing.
func (d *Database) BundleFile(ctx context.Context, since []string) (*os.File, BundleHeader, error) {
	root := filepath.Join(d.engine.dir, transferCacheDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, BundleHeader{}, err
	}
	f, err := os.CreateTemp(root, "bundle-out-")
	if err != nil {
		return nil, BundleHeader{}, err
	}
	os.Remove(f.Name())
	hdr, err := d.WriteBundle(ctx, f, since)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, hdr, diskFull(err)
	}
	return f, hdr, nil
}

// RestoreBundleUpload restores upload id into database db
// (RestoreBundle) and removes the upload, whether the restore took or
// not: a bundle that did not restore must be sent again.
func (e *Engine) RestoreBundleUpload(ctx context.Context, db, id string, allow func(PushUpdate) error) (BundleHeader, []RefUpdate, error) {
	ctx, leave, err := e.gate.enter(ctx)
	if err != nil {
		return BundleHeader{}, nil, err
	}
	defer leave()
	f, err := e.TakeUpload(ctx, UploadBundle, db, id)
	if err != nil {
		return BundleHeader{}, nil, err
	}
	defer f.Close()
	return e.RestoreBundle(ctx, db, f, allow)
}
