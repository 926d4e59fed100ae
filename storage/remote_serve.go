package storage

import (
	"bufio"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
)

// The serving side of remotes over HTTP: what a database answers to
// another server's fetch, clone and push (docs/format/remote-http.md).
// The server package speaks HTTP and checks users; this file the
// protocol's bodies and what they do to the database.

// RemoteFormat is the chunk format a served database's store holds.
var RemoteFormat = types.Format_DOLT.VersionString()

// MaxRemoteHashes bounds the addresses of one has or chunks request.
const MaxRemoteHashes = 1 << 20

// ErrBadRemoteRequest: a remote request whose body breaks the protocol.
var ErrBadRemoteRequest = errors.New("bad remote request")

// ServedRefs are the database's branches and tags as a remote serves
// them: refs/heads/<b> and refs/tags/<t> to their addresses.
func (d *Database) ServedRefs(ctx context.Context) (map[string]string, error) {
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	out := map[string]string{}
	if !d.born.Load() {
		return out, nil
	}
	for _, prefix := range []string{refHeads, refTags} {
		refs, err := datasetRefs(ctx, d.db, prefix)
		if err != nil {
			return nil, err
		}
		for name, addr := range refs {
			out[prefix+name] = addr.String()
		}
	}
	return out, nil
}

// RefsToken is a digest of the refs of the databases named: it changes
// when a branch or tag of any of them moves, appears or goes.
func (e *Engine) RefsToken(ctx context.Context, names []string) (string, error) {
	h := sha256.New()
	for _, name := range names {
		d, err := e.Database(ctx, name, false)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", name)
		if d == nil {
			continue
		}
		refs, err := d.ServedRefs(ctx)
		if err != nil && !errors.Is(err, ErrClosed) {
			return "", err
		}
		for _, id := range slices.Sorted(maps.Keys(refs)) {
			fmt.Fprintf(h, "%s=%s\x00", id, refs[id])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// parseHashBody reads a has or chunks request's addresses.
func parseHashBody(body []byte) (hash.HashSet, error) {
	if len(body)%hash.ByteLen != 0 || len(body)/hash.ByteLen > MaxRemoteHashes {
		return nil, fmt.Errorf("%w: a body of %d bytes is not up to %d addresses of %d bytes",
			ErrBadRemoteRequest, len(body), MaxRemoteHashes, hash.ByteLen)
	}
	hs := make(hash.HashSet, len(body)/hash.ByteLen)
	for i := 0; i < len(body); i += hash.ByteLen {
		hs.Insert(hash.New(body[i : i+hash.ByteLen]))
	}
	return hs, nil
}

// ServeHas answers a has request: the addresses of body the store lacks.
func (d *Database) ServeHas(ctx context.Context, body []byte) ([]byte, error) {
	hs, err := parseHashBody(body)
	if err != nil {
		return nil, err
	}
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	absent, err := d.cs.HasMany(ctx, hs)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(absent)*hash.ByteLen)
	for h := range absent {
		out = append(out, h[:]...)
	}
	return out, nil
}

// ServeChunks answers a chunks request: each chunk of body the store
// holds, written to w as a record (address, length, compressed bytes).
// A body that is no list of addresses fails before anything is written.
func (d *Database) ServeChunks(ctx context.Context, body []byte, w io.Writer) error {
	hs, err := parseHashBody(body)
	if err != nil {
		return err
	}
	if err = d.hold(ctx); err != nil {
		return err
	}
	defer d.release()
	bw := bufio.NewWriterSize(w, 256<<10)
	var mu sync.Mutex // the store calls back from several readers at once
	var writeErr error
	err = d.cs.GetManyCompressed(ctx, hs, func(_ context.Context, tc nbs.ToChunker) {
		mu.Lock()
		defer mu.Unlock()
		if writeErr != nil {
			return
		}
		cc, ok := tc.(nbs.CompressedChunk)
		if !ok {
			c, err := tc.ToChunk()
			if err != nil {
				writeErr = err
				return
			}
			cc = nbs.ChunkToCompressedChunk(c)
		}
		var rec [hash.ByteLen + 4]byte
		h := cc.Hash()
		copy(rec[:], h[:])
		binary.BigEndian.PutUint32(rec[hash.ByteLen:], uint32(len(cc.FullCompressedChunk)))
		if _, writeErr = bw.Write(rec[:]); writeErr == nil {
			_, writeErr = bw.Write(cc.FullCompressedChunk)
		}
	})
	return cmp.Or(err, writeErr, bw.Flush())
}

// PushUpdate is one ref update of a push, as the server checks it before
// the push applies: Branch or Tag names the ref; New is "" to delete.
type PushUpdate struct {
	Branch, Tag string
	Old, New    string
	Force       bool
}

// maxPushHeader bounds a push's JSON header.
const maxPushHeader = 1 << 20

// ReceivePush applies a push's body: its table files go into the store,
// then its ref updates apply, each checked by allow first (which refuses
// what the pushing user may not do). Nothing is written unless allow
// passes every update.
func (d *Database) ReceivePush(ctx context.Context, body io.Reader, allow func(PushUpdate) error) ([]RefUpdate, error) {
	hdr, updates, err := readPushHeader(body)
	if err != nil {
		return nil, err
	}
	for _, u := range updates {
		if err := allow(u); err != nil {
			return nil, err
		}
	}
	if err := d.hold(ctx); err != nil {
		return nil, err
	}
	defer d.release()
	if err := d.ensureBorn(ctx); err != nil {
		return nil, err
	}
	held, err := d.addPushedChunks(ctx, hdr.TableFiles, body, updates)
	defer d.dropIncoming(ctx, held)
	if err != nil {
		return nil, err
	}
	var out []RefUpdate
	for _, u := range updates {
		moved, err := d.applyPushUpdate(ctx, u)
		if err != nil {
			return out, err
		}
		if moved {
			name := u.Branch
			if u.Tag != "" {
				name = "tag " + u.Tag
			}
			out = append(out, RefUpdate{Name: name, Old: u.Old, New: u.New})
		}
	}
	return out, nil
}

// readPushHeader reads and checks a push's header.
func readPushHeader(body io.Reader) (httpPushHeader, []PushUpdate, error) {
	var hdr httpPushHeader
	var n [4]byte
	if _, err := io.ReadFull(body, n[:]); err != nil {
		return hdr, nil, fmt.Errorf("%w: push header: %v", ErrBadRemoteRequest, err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size > maxPushHeader {
		return hdr, nil, fmt.Errorf("%w: a push header of %d bytes", ErrBadRemoteRequest, size)
	}
	js := make([]byte, size)
	if _, err := io.ReadFull(body, js); err != nil {
		return hdr, nil, fmt.Errorf("%w: push header: %v", ErrBadRemoteRequest, err)
	}
	if err := json.Unmarshal(js, &hdr); err != nil {
		return hdr, nil, fmt.Errorf("%w: push header: %v", ErrBadRemoteRequest, err)
	}
	for _, f := range hdr.TableFiles {
		if _, ok := hash.MaybeParse(strings.TrimSuffix(f.ID, nbs.ArchiveFileSuffix)); !ok || f.Length <= 0 || f.Chunks <= 0 {
			return hdr, nil, fmt.Errorf("%w: table file %q", ErrBadRemoteRequest, f.ID)
		}
	}
	updates := make([]PushUpdate, 0, len(hdr.Updates))
	for _, u := range hdr.Updates {
		pu, err := pushUpdate(u)
		if err != nil {
			return hdr, nil, err
		}
		updates = append(updates, pu)
	}
	return hdr, updates, nil
}

// pushUpdate checks one update of a push's header.
func pushUpdate(u httpRefUpdate) (PushUpdate, error) {
	pu := PushUpdate{Old: u.Old, New: u.New, Force: u.Force}
	for _, s := range []string{u.Old, u.New} {
		if _, ok := hash.MaybeParse(s); s != "" && !ok {
			return pu, fmt.Errorf("%w: address %q", ErrBadRemoteRequest, s)
		}
	}
	switch {
	case strings.HasPrefix(u.Ref, refHeads):
		pu.Branch = strings.TrimPrefix(u.Ref, refHeads)
	case strings.HasPrefix(u.Ref, refTags):
		pu.Tag = strings.TrimPrefix(u.Ref, refTags)
	}
	if name := pu.Branch + pu.Tag; !ValidRefName(name) {
		return pu, fmt.Errorf("%w: ref %q", ErrInvalidRefName, u.Ref)
	}
	return pu, nil
}

// refIncoming prefixes the refs that keep a push's commits from GC
// between the table files' arrival and the ref updates: GC waits for
// the first, but the second takes the branches' locks, which a
// checkpoint takes before the lock GC waits on.
const refIncoming = "refs/incoming/"

// addPushedChunks adds a push's table files and points refs/incoming/
// refs at what its updates set, GC waiting meanwhile; it returns those
// refs, which the push deletes once it applied.
func (d *Database) addPushedChunks(ctx context.Context, files []httpTableFile, body io.Reader, updates []PushUpdate) ([]string, error) {
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	if err := d.addPushedTableFiles(ctx, files, body); err != nil {
		return nil, err
	}
	var held []string
	seq := incomingSeq.Add(1)
	for i, u := range updates {
		addr, ok := hash.MaybeParse(u.New)
		if !ok {
			continue
		}
		if has, err := d.cs.Has(ctx, addr); err != nil || !has {
			return held, cmp.Or(err, fmt.Errorf("%w: %s is not in the store", ErrBadRemoteRequest, u.New))
		}
		id := fmt.Sprintf("%s%d-%d", refIncoming, seq, i)
		if err := setRef(ctx, d.db, id, addr); err != nil {
			return held, err
		}
		held = append(held, id)
	}
	return held, nil
}

// incomingSeq tells apart the incoming refs of concurrent pushes.
var incomingSeq atomic.Int64

// dropIncoming deletes a push's incoming refs.
func (d *Database) dropIncoming(ctx context.Context, ids []string) {
	for _, id := range ids {
		ds, err := d.db.GetDataset(ctx, id)
		if err == nil && ds.HasHead() {
			if _, err := d.db.Delete(ctx, ds, ""); err != nil {
				d.log.Warn().Str("c", "STORAGE").Err(err).Str("db", d.name).Str("ref", id).Msg("deleting a push's incoming ref failed")
			}
		}
	}
}

// addPushedTableFiles writes a push's table files into the store and adds
// them to its manifest in one update, which checks that every address
// their chunks hold is in the store.
func (d *Database) addPushedTableFiles(ctx context.Context, files []httpTableFile, body io.Reader) error {
	if len(files) == 0 {
		return nil
	}
	added := map[string]int{}
	for _, f := range files {
		rd := io.NopCloser(io.LimitReader(body, f.Length))
		err := d.cs.WriteTableFile(ctx, f.ID, f.SplitOffset, f.Chunks, nil, func() (io.ReadCloser, uint64, error) {
			return rd, uint64(f.Length), nil
		})
		if err != nil {
			return fmt.Errorf("%w: table file %s: %v", ErrBadRemoteRequest, f.ID, err)
		}
		added[strings.TrimSuffix(f.ID, nbs.ArchiveFileSuffix)] = f.Chunks
	}
	walk, err := types.WalkAddrsForChunkStore(d.cs)
	if err != nil {
		return err
	}
	getAddrs := func(c chunks.Chunk) chunks.GetAddrsCb {
		return func(ctx context.Context, ins hash.HashSet, exists chunks.PendingRefExists) error {
			return walk(c, func(h hash.Hash, _ bool) error {
				if !exists(h) {
					ins.Insert(h)
				}
				return nil
			})
		}
	}
	if err := d.cs.AddTableFilesToManifest(ctx, added, getAddrs); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRemoteRequest, err)
	}
	return nil
}

// applyPushUpdate applies one ref update; it reports whether a ref moved.
func (d *Database) applyPushUpdate(ctx context.Context, u PushUpdate) (bool, error) {
	if u.Tag != "" {
		return d.receiveTag(ctx, u)
	}
	if u.New == "" {
		if err := d.DeleteBranch(ctx, u.Branch, DefaultBranch, true); err != nil {
			return false, err
		}
		return true, nil
	}
	addr, _ := hash.MaybeParse(u.New)
	c, err := datas.LoadCommitAddr(ctx, d.vs, addr)
	if err != nil {
		return false, fmt.Errorf("%w: %s is no commit this database holds: %v", ErrBadRemoteRequest, u.New, err)
	}
	if ok, err := d.hasRef(ctx, refHeads, u.Branch); err != nil || !ok {
		if err == nil && u.Old != "" {
			err = fmt.Errorf("%w: branch %s is gone", ErrNotFastForward, u.Branch)
		}
		if err == nil {
			_, err = d.CreateBranch(ctx, u.Branch, Revision{Commit: addr})
		}
		return err == nil, err
	}
	return d.receiveBranch(ctx, u, c)
}

// receiveBranch moves an existing branch to a pushed commit: only from
// the head the pusher saw, only forward, only when it has no uncommitted
// changes, unless forced; its working set becomes the commit's.
func (d *Database) receiveBranch(ctx context.Context, u PushUpdate, c *datas.Commit) (bool, error) {
	moved := false
	err := d.lockedBranch(ctx, u.Branch, func(b *branch) error {
		ds, err := d.refDataset(ctx, refHeads, u.Branch)
		if err != nil {
			return err
		}
		cur, _ := ds.MaybeHeadAddr()
		if cur == c.Addr() {
			return nil
		}
		if !u.Force {
			if err := d.checkPushedOver(ctx, b, u, cur, c); err != nil {
				return err
			}
		}
		if _, err := d.db.SetHead(ctx, ds, c.Addr(), ""); err != nil {
			return err
		}
		d.engine.panics.at("vc.ref")
		moved = true
		return d.resetWorkingSet(ctx, b, c)
	})
	return moved, err
}

// checkPushedOver refuses a push that is not a fast-forward of the head
// the pusher saw, or that would drop uncommitted changes.
func (d *Database) checkPushedOver(ctx context.Context, b *branch, u PushUpdate, cur hash.Hash, c *datas.Commit) error {
	if cur.String() != u.Old {
		return fmt.Errorf("%w: branch %s moved since the pusher read it", ErrNotFastForward, u.Branch)
	}
	head, err := datas.LoadCommitAddr(ctx, d.vs, cur)
	if err != nil {
		return err
	}
	bases, err := d.mergeBases(ctx, []*datas.Commit{head}, []*datas.Commit{c})
	if err != nil {
		return err
	}
	if !onlyBase(bases, head) {
		return fmt.Errorf("%w: branch %s has commits the push lacks", ErrNotFastForward, u.Branch)
	}
	same, err := sameData(ctx, d.ns, b.state.Load().root, b.headRef.TargetHash())
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("%w: %s on the remote (push with force to drop them)", ErrBranchDirty, u.Branch)
	}
	return nil
}

// receiveTag sets or deletes a pushed tag; an existing tag moves only
// when forced.
func (d *Database) receiveTag(ctx context.Context, u PushUpdate) (bool, error) {
	ds, err := d.refDataset(ctx, refTags, u.Tag)
	if err != nil {
		return false, err
	}
	cur, has := ds.MaybeHeadAddr()
	switch {
	case u.New == "" && !has:
		return false, fmt.Errorf("%w: %s", ErrTagNotFound, u.Tag)
	case u.New == "":
		_, err = d.db.Delete(ctx, ds, "")
		return err == nil, err
	case cur.String() == u.New:
		return false, nil
	case has && !u.Force:
		return false, fmt.Errorf("%w: %s", ErrTagExists, u.Tag)
	}
	addr, _ := hash.MaybeParse(u.New) // in the store: addPushedChunks checked
	_, err = d.db.SetHead(ctx, ds, addr, "")
	return err == nil, err
}
