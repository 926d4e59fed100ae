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

	"github.com/dumbodb/dumbodb/mongoerr"

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

// httpClients are the clients of remotes over HTTP, one per CA file
// ("": the system's roots), so that the requests of every fetch, push
// and replica poll share their connections.
var httpClients = struct {
	sync.Mutex
	m map[string]*http.Client
}{m: map[string]*http.Client{}}

// httpRemoteClient is the client requests go through: the system's roots,
// or those of caFile, for https.
func httpRemoteClient(caFile string) (*http.Client, error) {
	httpClients.Lock()
	defer httpClients.Unlock()
	if c, ok := httpClients.m[caFile]; ok {
		return c, nil
	}
	c, err := newHTTPRemoteClient(caFile)
	if err == nil {
		httpClients.m[caFile] = c
	}
	return c, err
}

func newHTTPRemoteClient(caFile string) (*http.Client, error) {
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
		if ctx.Err() != nil {
			return nil, fmt.Errorf("remote %s: %w", ep.display, ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrRemoteUnreachable, ep.display, err)
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

// httpRemote is one database of another server, open as a remote; a
// push's chunks wait in the server's push cache under pushID until its
// ref update applies them (remote_http_push.go).
type httpRemote struct {
	ep     *httpEndpoint
	db     string
	format string
	pushID string // the push whose chunks sendChunks uploaded ("": none)
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
	r := &httpRemote{ep: ep, db: db}
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

func (r *httpRemote) close() error { return nil }

// httpChunkStore is an http remote's chunks as a copy's source: read
// with has and chunks requests. Pushes send chunks their own way
// (remote_http_push.go).
type httpChunkStore struct {
	r *httpRemote
}

var _ nbs.NBSCompressedChunkStore = (*httpChunkStore)(nil)

// errHTTPRemoteReadOnly: a chunk-store call an http remote does not
// take (a push sends its chunks with sendChunks).
var errHTTPRemoteReadOnly = errors.New("an http remote takes chunks only with a push")

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
