package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/datas"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
)

// Receiving a push over HTTP (docs/format/remote-http.md, "push"): its
// chunks arrive first into a push cache of their own, which a push cut
// off keeps, so that the push done again sends only what is missing;
// the ref update then copies them into the database's store, checking
// that nothing they reach is missing, and moves the refs.

// ValidPushID reports whether id can name a push: hexadecimal, 16 to 64
// digits.
func ValidPushID(id string) bool {
	if len(id) < 16 || len(id) > 64 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// pushCacheDir is the directory of a push's cache.
func (d *Database) pushCacheDir(id string) string {
	sum := sha256.Sum256([]byte(d.name + "\x00" + id))
	return filepath.Join(d.engine.dir, transferCacheDir, "push-"+hex.EncodeToString(sum[:8]))
}

// ServePushHas answers which of body's addresses the push's cache lacks.
func (d *Database) ServePushHas(ctx context.Context, id string, body []byte) ([]byte, error) {
	hs, err := parseHashBody(body)
	if err != nil {
		return nil, err
	}
	c, err := d.engine.openCacheAt(ctx, d.pushCacheDir(id))
	if err != nil {
		return nil, err
	}
	defer c.cs.Close()
	absent, err := c.cs.HasMany(ctx, hs)
	if err != nil {
		return nil, err
	}
	out, _ := hashBody(absent)
	return out, nil
}

// ReceivePushChunks reads a push's chunk records into its cache: each
// checked (CRC, and its address against its data) before it is kept.
// What arrived is kept even when the body is cut off.
func (d *Database) ReceivePushChunks(ctx context.Context, id string, body io.Reader) error {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return err
	}
	defer leave()
	c, err := d.engine.openCacheAt(ctx, d.pushCacheDir(id))
	if err != nil {
		return err
	}
	defer c.finish(false)
	var rec [hash.ByteLen + 4]byte
	for {
		if _, err := io.ReadFull(body, rec[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%w: chunks: %v", ErrBadRemoteRequest, err)
		}
		ch, err := readChunkRecord(body, rec)
		if err != nil {
			return err
		}
		c.putChunk(ctx, ch)
	}
}

// readChunkRecord reads the data of a record whose address and length
// rec holds, and checks it.
func readChunkRecord(body io.Reader, rec [hash.ByteLen + 4]byte) (chunks.Chunk, error) {
	h := hash.New(rec[:hash.ByteLen])
	n := binary.BigEndian.Uint32(rec[hash.ByteLen:])
	if n < 4 || n > maxChunkRecord {
		return chunks.Chunk{}, fmt.Errorf("%w: a chunk record of %d bytes", ErrBadRemoteRequest, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		return chunks.Chunk{}, fmt.Errorf("%w: chunks: %v", ErrBadRemoteRequest, err)
	}
	cc, err := nbs.NewCompressedChunk(h, buf)
	if err != nil {
		return chunks.Chunk{}, fmt.Errorf("%w: chunk %s: %v", ErrBadRemoteRequest, h, err)
	}
	ch, err := cc.ToChunk()
	if err == nil && hash.Of(ch.Data()) != h {
		err = errors.New("its data has another address")
	}
	if err != nil {
		return chunks.Chunk{}, fmt.Errorf("%w: chunk %s: %v", ErrBadRemoteRequest, h, err)
	}
	return ch, nil
}

// maxPushRequest bounds a push's ref update request.
const maxPushRequest = 1 << 20

// ReceivePush applies a push's ref updates, each checked by allow first
// (which refuses what the pushing user may not do): the chunks its cache
// holds are copied into the store, then the refs move. Nothing is written
// unless allow passes every update; a push that applied removes its
// cache.
func (d *Database) ReceivePush(ctx context.Context, id string, body io.Reader, allow func(PushUpdate) error) ([]RefUpdate, error) {
	ctx, leave, err := d.enterGate(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()
	updates, err := readPushRequest(body)
	if err != nil {
		return nil, err
	}
	return d.applyUpdates(ctx, d.pushCacheDir(id), updates, allow,
		fmt.Errorf("%w: the push lacks chunks its commits reach", ErrBadRemoteRequest))
}

// applyUpdates applies ref updates whose chunks the store or the cache
// in dir hold, each checked by allow first: nothing is written unless
// allow passes every update. lacking is the error when the updates reach
// a chunk neither holds; then no ref moves. Once every update applied,
// the cache is removed.
func (d *Database) applyUpdates(ctx context.Context, dir string, updates []PushUpdate, allow func(PushUpdate) error, lacking error) ([]RefUpdate, error) {
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
	held, err := d.takeCachedChunks(ctx, dir, updates, lacking)
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
	os.RemoveAll(dir)
	return out, nil
}

// readPushRequest reads and checks a push's ref updates.
func readPushRequest(body io.Reader) ([]PushUpdate, error) {
	data, err := io.ReadAll(io.LimitReader(body, maxPushRequest+1))
	if err != nil || len(data) > maxPushRequest {
		return nil, fmt.Errorf("%w: a push request must be JSON of at most %d bytes", ErrBadRemoteRequest, maxPushRequest)
	}
	var req httpPushRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("%w: push request: %v", ErrBadRemoteRequest, err)
	}
	updates := make([]PushUpdate, 0, len(req.Updates))
	for _, u := range req.Updates {
		pu, err := pushUpdate(u)
		if err != nil {
			return nil, err
		}
		updates = append(updates, pu)
	}
	return updates, nil
}

// PushUpdate is one ref update of a push, as the server checks it before
// the push applies: Branch or Tag names the ref; New is "" to delete.
type PushUpdate struct {
	Branch, Tag string
	Old, New    string
	Force       bool
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

// takeCachedChunks copies into the store what the updates set and the
// store lacks, from the cache in dir, and points refs/incoming/ refs at
// the updates' addresses, GC waiting meanwhile; it returns those refs,
// which the caller deletes once the updates applied.
func (d *Database) takeCachedChunks(ctx context.Context, dir string, updates []PushUpdate, lacking error) ([]string, error) {
	d.compactMu.Lock()
	defer d.compactMu.Unlock()
	var news []hash.Hash
	for _, u := range updates {
		if addr, ok := hash.MaybeParse(u.New); ok {
			news = append(news, addr)
		}
	}
	if err := d.copyFromCache(ctx, dir, news, lacking); err != nil {
		return nil, err
	}
	var held []string
	seq := incomingSeq.Add(1)
	for i, addr := range news {
		ref := fmt.Sprintf("%s%d-%d", refIncoming, seq, i)
		if err := setRef(ctx, d.db, ref, addr); err != nil {
			return held, err
		}
		held = append(held, ref)
	}
	return held, nil
}

// copyFromCache copies what addrs reach and the store lacks from the
// cache in dir; a chunk neither holds is the error lacking.
func (d *Database) copyFromCache(ctx context.Context, dir string, addrs []hash.Hash, lacking error) error {
	absent, err := d.cs.HasMany(ctx, hash.NewHashSet(addrs...))
	if err != nil || len(absent) == 0 {
		return err
	}
	if !hasStore(dir) {
		return lacking
	}
	c, err := d.engine.openCacheAt(ctx, dir)
	if err != nil {
		return err
	}
	defer c.cs.Close()
	_, err = copyChunks(ctx, c.cs, d.cs, absent.ToSlice())
	if err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w: %v", lacking, err)
	}
	return err
}
