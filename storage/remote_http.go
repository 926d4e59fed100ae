package storage

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"dumbodb/mongoerr"

	"github.com/dolthub/dolt/go/store/chunks"
	"github.com/dolthub/dolt/go/store/hash"
	"github.com/dolthub/dolt/go/store/nbs"
	"github.com/dolthub/dolt/go/store/types"
)

// The client side of remotes over HTTP: a database another DumboDB server
// serves on its HTTP listener (docs/format/remote-http.md).

// httpRemotePrefix is the path the protocol's requests go under.
const httpRemotePrefix = "/remote/v1/"

// httpEndpoint is a DumboDB server's HTTP listener as a client reaches
// it: its root URL, the credentials to send and the client to send with.
type httpEndpoint struct {
	root                       url.URL // scheme and host only
	user, password, authSource string
	client                     *http.Client
	display                    string // the URL as shown: no credentials
}

// parseHTTPRemoteURL reads http(s)://[user:pw@]host:port[/<db>][?authSource=&tlsCAFile=];
// db is the path's one segment, "" for the server's root.
func parseHTTPRemoteURL(rawURL string) (ep *httpEndpoint, db string, err error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return nil, "", fmt.Errorf("%w: %s", ErrBadRemoteURL, RedactURL(rawURL))
	}
	db = strings.Trim(u.Path, "/")
	if strings.Contains(db, "/") {
		return nil, "", fmt.Errorf("%w: an http remote is http://host:port/<database>, not %s", ErrBadRemoteURL, RedactURL(rawURL))
	}
	q := u.Query()
	for k := range q {
		if k != "authSource" && k != "tlsCAFile" {
			return nil, "", fmt.Errorf("%w: unknown option %q in %s", ErrBadRemoteURL, k, RedactURL(rawURL))
		}
	}
	ep = &httpEndpoint{root: url.URL{Scheme: u.Scheme, Host: u.Host}, authSource: q.Get("authSource"), display: RedactURL(rawURL)}
	if ep.authSource == "" {
		ep.authSource = "admin"
	}
	if u.User != nil {
		ep.user = u.User.Username()
		ep.password, _ = u.User.Password()
	}
	if ep.client, err = httpRemoteClient(q.Get("tlsCAFile")); err != nil {
		return nil, "", err
	}
	return ep, db, nil
}

// httpRemoteClient is the client requests go through: the system's roots,
// or those of caFile, for https.
func httpRemoteClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 8
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%w: tlsCAFile: %v", ErrBadRemoteURL, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: tlsCAFile %s holds no certificate", ErrBadRemoteURL, caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr}, nil
}

// do sends a request to path (under the protocol's prefix) and returns
// the answer of a 2xx status; any other is the error the server named.
func (ep *httpEndpoint) do(ctx context.Context, method, path string, body io.Reader, size int64) (*http.Response, error) {
	u := ep.root
	u.Path = httpRemotePrefix + path
	if i := strings.IndexByte(path, '?'); i >= 0 {
		u.Path, u.RawQuery = httpRemotePrefix+path[:i], path[i+1:]
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if ep.user != "" {
		req.SetBasicAuth(ep.user, ep.password)
		req.Header.Set("X-Dumbo-Auth-Source", ep.authSource)
	}
	resp, err := ep.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote %s: %w", ep.display, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, ep.refusal(resp)
}

// getJSON sends a GET and decodes its JSON answer into out.
func (ep *httpEndpoint) getJSON(ctx context.Context, path string, out any) error {
	resp, err := ep.do(ctx, http.MethodGet, path, nil, 0)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("remote %s: bad answer: %w", ep.display, err)
	}
	return nil
}

// RemoteRefusal is what a remote server answered to a request it refused:
// its MongoDB error, and the storage error the code stands for, if any,
// so that callers test it as they test a local one.
type RemoteRefusal struct {
	Err      *mongoerr.Error
	sentinel error
}

func (e *RemoteRefusal) Error() string { return e.Err.Msg }

func (e *RemoteRefusal) Unwrap() []error {
	if e.sentinel == nil {
		return []error{e.Err}
	}
	return []error{e.sentinel, e.Err}
}

// refusalSentinels are the storage errors a remote's codes stand for.
var refusalSentinels = map[mongoerr.Code]error{
	mongoerr.NotFastForward:    ErrNotFastForward,
	mongoerr.NamespaceNotFound: ErrRemoteNotFound,
	mongoerr.DirtyWorkingSet:   ErrBranchDirty,
	mongoerr.RevisionNotFound:  ErrBranchNotFound,
}

// refusal reads a refused request's answer: MongoDB's error shape as
// JSON, else the status.
func (ep *httpEndpoint) refusal(resp *http.Response) error {
	var body struct {
		Code     int32  `json:"code"`
		CodeName string `json:"codeName"`
		Errmsg   string `json:"errmsg"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	code := mongoerr.InternalError
	msg := resp.Status
	if json.Unmarshal(data, &body) == nil && body.Errmsg != "" {
		msg = body.Errmsg
		if c, ok := mongoerr.CodeNamed(body.CodeName); ok {
			code = c
		}
	}
	me := mongoerr.New(code, "remote %s: %s", ep.display, msg)
	return &RemoteRefusal{Err: me, sentinel: refusalSentinels[code]}
}

// httpRemote is one database of another server, open as a remote: the
// chunk store copies read and write, and the table files a push has
// written for it and sends with its next ref update.
type httpRemote struct {
	ep     *httpEndpoint
	db     string
	format string

	mu      sync.Mutex
	staged  []stagedTableFile
	pending map[string]bool // staged files added to the "manifest": ready to send
}

// stagedTableFile is a table file Dolt's puller wrote for the remote,
// held in a temporary file until a ref update carries it.
type stagedTableFile struct {
	id          string
	chunks      int
	length      int64
	splitOffset uint64
	path        string
}

// openHTTPRemote opens database db of the server an http(s) URL names;
// the database must exist there.
func openHTTPRemote(ctx context.Context, rawURL string) (remoteStore, error) {
	ep, db, err := parseHTTPRemoteURL(rawURL)
	if err != nil {
		return nil, err
	}
	if db == "" {
		return nil, fmt.Errorf("%w: %s names no database", ErrBadRemoteURL, ep.display)
	}
	r := &httpRemote{ep: ep, db: db, pending: map[string]bool{}}
	if _, err := r.allRefs(ctx); err != nil {
		return nil, err
	}
	if r.format != types.Format_DOLT.VersionString() {
		return nil, fmt.Errorf("remote %s: its store's format %q is not %q", ep.display, r.format, types.Format_DOLT.VersionString())
	}
	return r, nil
}

// httpRefs is the answer to GET <db>/refs.
type httpRefs struct {
	Format string            `json:"format"`
	Refs   map[string]string `json:"refs"`
}

// allRefs reads the database's branches and tags.
func (r *httpRemote) allRefs(ctx context.Context) (map[string]hash.Hash, error) {
	var body httpRefs
	if err := r.ep.getJSON(ctx, url.PathEscape(r.db)+"/refs", &body); err != nil {
		return nil, err
	}
	r.format = body.Format
	out := make(map[string]hash.Hash, len(body.Refs))
	for name, s := range body.Refs {
		h, ok := hash.MaybeParse(s)
		if !ok {
			return nil, fmt.Errorf("remote %s: bad address %q of %s", r.ep.display, s, name)
		}
		out[name] = h
	}
	return out, nil
}

func (r *httpRemote) refs(ctx context.Context, prefix string) (map[string]hash.Hash, error) {
	all, err := r.allRefs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]hash.Hash{}
	for id, h := range all {
		if name, ok := strings.CutPrefix(id, prefix); ok {
			out[name] = h
		}
	}
	return out, nil
}

func (r *httpRemote) chunks() chunks.ChunkStore { return &httpChunkStore{r: r} }

func (r *httpRemote) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.staged {
		os.Remove(f.path)
	}
	r.staged, r.pending = nil, map[string]bool{}
	return nil
}

// httpRefUpdate is one update of a push's header.
type httpRefUpdate struct {
	Ref   string `json:"ref"`
	Old   string `json:"old"`
	New   string `json:"new"`
	Force bool   `json:"force"`
}

// httpTableFile is one table file of a push's header.
type httpTableFile struct {
	ID          string `json:"id"`
	Chunks      int    `json:"chunks"`
	Length      int64  `json:"length"`
	SplitOffset uint64 `json:"splitOffset"`
}

// httpPushHeader is a push's header.
type httpPushHeader struct {
	TableFiles []httpTableFile `json:"tableFiles"`
	Updates    []httpRefUpdate `json:"updates"`
}

// moveRef sends one ref update, with the table files staged for it.
func (r *httpRemote) moveRef(ctx context.Context, id string, addr hash.Hash, force bool) (hash.Hash, error) {
	refs, err := r.allRefs(ctx)
	if err != nil {
		return hash.Hash{}, err
	}
	old := refs[id]
	if old == addr && !addr.IsEmpty() {
		return old, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	hdr := httpPushHeader{Updates: []httpRefUpdate{{Ref: id, Old: addrString(old), New: addrString(addr), Force: force}}}
	var files []stagedTableFile
	for _, f := range r.staged {
		if r.pending[strings.TrimSuffix(f.id, nbs.ArchiveFileSuffix)] {
			files = append(files, f)
			hdr.TableFiles = append(hdr.TableFiles, httpTableFile{ID: f.id, Chunks: f.chunks, Length: f.length, SplitOffset: f.splitOffset})
		}
	}
	body, size, closeBody, err := pushBody(hdr, files)
	if err != nil {
		return old, err
	}
	defer closeBody()
	resp, err := r.ep.do(ctx, http.MethodPost, url.PathEscape(r.db)+"/push", body, size)
	if err != nil {
		return old, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.dropSent(files)
	return old, nil
}

// pushBody is a push's body: the header's length and JSON, then the
// table files' bytes.
func pushBody(hdr httpPushHeader, files []stagedTableFile) (io.Reader, int64, func(), error) {
	js, err := json.Marshal(hdr)
	if err != nil {
		return nil, 0, nil, err
	}
	head := make([]byte, 4, 4+len(js))
	binary.BigEndian.PutUint32(head, uint32(len(js)))
	head = append(head, js...)
	readers := []io.Reader{bytes.NewReader(head)}
	size := int64(len(head))
	var opened []*os.File
	closeAll := func() {
		for _, f := range opened {
			f.Close()
		}
	}
	for _, f := range files {
		fh, err := os.Open(f.path)
		if err != nil {
			closeAll()
			return nil, 0, nil, err
		}
		opened = append(opened, fh)
		readers = append(readers, io.LimitReader(fh, f.length))
		size += f.length
	}
	return io.MultiReader(readers...), size, closeAll, nil
}

// dropSent forgets (and removes) table files the server has taken.
func (r *httpRemote) dropSent(sent []stagedTableFile) {
	gone := map[string]bool{}
	for _, f := range sent {
		gone[f.id] = true
		os.Remove(f.path)
		delete(r.pending, strings.TrimSuffix(f.id, nbs.ArchiveFileSuffix))
	}
	kept := r.staged[:0]
	for _, f := range r.staged {
		if !gone[f.id] {
			kept = append(kept, f)
		}
	}
	r.staged = kept
}

// httpChunkStore is an http remote's chunks: read with has and chunks
// requests (a copy's source), written by staging the table files Dolt's
// puller makes (a copy's sink) for the next ref update to carry.
type httpChunkStore struct {
	r *httpRemote
}

var (
	_ nbs.NBSCompressedChunkStore = (*httpChunkStore)(nil)
	_ chunks.TableFileStore       = (*httpChunkStore)(nil)
)

// errHTTPRemoteReadOnly: a chunk-store call an http remote does not
// take (chunks move as table files with a push).
var errHTTPRemoteReadOnly = errors.New("an http remote takes chunks only as table files with a push")

// hashBody is hashes as a request body: their 20 bytes each.
func hashBody(hs hash.HashSet) ([]byte, []hash.Hash) {
	list := make([]hash.Hash, 0, len(hs))
	buf := make([]byte, 0, len(hs)*hash.ByteLen)
	for h := range hs {
		list = append(list, h)
		buf = append(buf, h[:]...)
	}
	return buf, list
}

func (s *httpChunkStore) HasMany(ctx context.Context, hs hash.HashSet) (hash.HashSet, error) {
	absent := hash.HashSet{}
	if len(hs) == 0 {
		return absent, nil
	}
	body, _ := hashBody(hs)
	resp, err := s.r.ep.do(ctx, http.MethodPost, url.PathEscape(s.r.db)+"/has", bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if len(data)%hash.ByteLen != 0 {
		return nil, fmt.Errorf("remote %s: has: an answer of %d bytes", s.r.ep.display, len(data))
	}
	for i := 0; i < len(data); i += hash.ByteLen {
		absent.Insert(hash.New(data[i : i+hash.ByteLen]))
	}
	return absent, nil
}

func (s *httpChunkStore) Has(ctx context.Context, h hash.Hash) (bool, error) {
	absent, err := s.HasMany(ctx, hash.NewHashSet(h))
	return err == nil && !absent.Has(h), err
}

// maxChunkRecord bounds one chunk of a chunks answer: Dolt's chunks are
// far smaller; a larger length is a damaged answer.
const maxChunkRecord = 64 << 20

func (s *httpChunkStore) GetManyCompressed(ctx context.Context, hs hash.HashSet, found func(context.Context, nbs.ToChunker)) error {
	if len(hs) == 0 {
		return nil
	}
	body, _ := hashBody(hs)
	resp, err := s.r.ep.do(ctx, http.MethodPost, url.PathEscape(s.r.db)+"/chunks", bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var rec [hash.ByteLen + 4]byte
	for {
		if _, err := io.ReadFull(resp.Body, rec[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("remote %s: chunks: %w", s.r.ep.display, err)
		}
		h := hash.New(rec[:hash.ByteLen])
		n := binary.BigEndian.Uint32(rec[hash.ByteLen:])
		if !hs.Has(h) || n < 4 || n > maxChunkRecord {
			return fmt.Errorf("remote %s: chunks: a record of %s, %d bytes, that was not asked for", s.r.ep.display, h, n)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			return fmt.Errorf("remote %s: chunks: %w", s.r.ep.display, err)
		}
		cc, err := nbs.NewCompressedChunk(h, buf)
		if err != nil {
			return fmt.Errorf("remote %s: chunk %s: %w", s.r.ep.display, h, err)
		}
		found(ctx, cc)
	}
}

func (s *httpChunkStore) GetMany(ctx context.Context, hs hash.HashSet, found func(context.Context, *chunks.Chunk)) error {
	var convErr error
	err := s.GetManyCompressed(ctx, hs, func(ctx context.Context, tc nbs.ToChunker) {
		c, err := tc.ToChunk()
		if err != nil {
			convErr = err
			return
		}
		found(ctx, &c)
	})
	return errors.Join(err, convErr)
}

func (s *httpChunkStore) Get(ctx context.Context, h hash.Hash) (chunks.Chunk, error) {
	out := chunks.EmptyChunk
	err := s.GetMany(ctx, hash.NewHashSet(h), func(_ context.Context, c *chunks.Chunk) { out = *c })
	return out, err
}

func (s *httpChunkStore) Version() string { return s.r.format }

func (s *httpChunkStore) AccessMode() chunks.ExclusiveAccessMode {
	return chunks.ExclusiveAccessMode_Shared
}

func (s *httpChunkStore) Put(context.Context, chunks.Chunk, chunks.GetAddrsCurry) error {
	return errHTTPRemoteReadOnly
}

func (s *httpChunkStore) Rebase(context.Context) error { return nil }

func (s *httpChunkStore) Root(context.Context) (hash.Hash, error) { return hash.Hash{}, nil }

func (s *httpChunkStore) Commit(context.Context, hash.Hash, hash.Hash) (bool, error) {
	return false, errHTTPRemoteReadOnly
}

func (s *httpChunkStore) Stats() any { return nil }

func (s *httpChunkStore) StatsSummary() string { return "" }

func (s *httpChunkStore) PersistGhostHashes(context.Context, hash.HashSet) error {
	return errHTTPRemoteReadOnly
}

func (s *httpChunkStore) Close() error { return nil }

func (s *httpChunkStore) Sources(context.Context) (chunks.TableFileSources, error) {
	return chunks.TableFileSources{}, errHTTPRemoteReadOnly
}

func (s *httpChunkStore) Size(context.Context) (uint64, error) { return 0, nil }

// WriteTableFile stages a table file the puller wrote for the remote.
func (s *httpChunkStore) WriteTableFile(ctx context.Context, id string, splitOffset uint64, numChunks int, _ []byte, getRd func() (io.ReadCloser, uint64, error)) error {
	rd, _, err := getRd()
	if err != nil {
		return err
	}
	defer rd.Close()
	f, err := os.CreateTemp("", "dumbodb-push-*")
	if err != nil {
		return err
	}
	n, err := io.Copy(f, rd)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.staged = append(s.r.staged, stagedTableFile{id: id, chunks: numChunks, length: n, splitOffset: splitOffset, path: f.Name()})
	return nil
}

// AddTableFilesToManifest marks staged table files ready: the next ref
// update sends them, and the server adds them to its store with it.
// Files are named here as in a manifest: an archive without its suffix.
func (s *httpChunkStore) AddTableFilesToManifest(_ context.Context, files map[string]int, _ chunks.GetAddrsCurry) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	for id := range files {
		s.r.pending[id] = true
	}
	return nil
}

func (s *httpChunkStore) PruneTableFiles(context.Context) error { return nil }

func (s *httpChunkStore) SupportedOperations() chunks.TableFileStoreOps {
	return chunks.TableFileStoreOps{CanWrite: true}
}

// httpListing is the answer to GET /remote/v1/.
type httpListing struct {
	Protocol  int      `json:"protocol"`
	Format    string   `json:"format"`
	Databases []string `json:"databases"`
	Token     string   `json:"token"`
}

// httpRemoteDatabases lists the databases a server serves to the URL's
// user.
func httpRemoteDatabases(ctx context.Context, rawURL string) ([]string, error) {
	l, err := listHTTPRemote(ctx, rawURL, "", 0)
	return l.Databases, err
}

func listHTTPRemote(ctx context.Context, rawURL, wait string, timeout time.Duration) (httpListing, error) {
	var l httpListing
	ep, db, err := parseHTTPRemoteURL(rawURL)
	if err != nil {
		return l, err
	}
	if db != "" {
		return l, fmt.Errorf("%w: a replica's root is http://host:port/, not %s", ErrBadRemoteURL, ep.display)
	}
	path := ""
	if wait != "" {
		path = fmt.Sprintf("?wait=%s&timeoutMs=%d", url.QueryEscape(wait), timeout.Milliseconds())
	}
	err = ep.getJSON(ctx, path, &l)
	return l, err
}

// WaitRemoteChange returns when a replica's root may hold something new:
// for an http(s) root, once the server reports a change since token (a
// long poll of at most max; the token of what it reports comes back);
// for a store, after max.
func WaitRemoteChange(ctx context.Context, rawURL, token string, max time.Duration) (string, error) {
	if u, err := url.Parse(rawURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		select {
		case <-ctx.Done():
		case <-time.After(max):
		}
		return "", nil
	}
	if token == "" {
		l, err := listHTTPRemote(ctx, rawURL, "", 0)
		return l.Token, err
	}
	l, err := listHTTPRemote(ctx, rawURL, token, max)
	return l.Token, err
}
