package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// A database's remotes and its branches' upstreams, kept in the remotes
// file beside its store (docs/format/remotes.md).

// Remote is one remote of a database.
type Remote struct {
	Name string
	URL  string // as given, credentials included
}

// Upstream is the remote branch a branch pulls from and pushes to.
type Upstream struct {
	Remote, Branch string
}

// remoteConfig is the remotes file's contents.
type remoteConfig struct {
	remotes   map[string]string   // name → URL
	upstreams map[string]Upstream // branch → its upstream
}

const (
	remotesFileName   = "remotes"
	remotesHeaderSize = 16
)

// RedactURL is a remote URL as it may be shown: without user
// information. Unparsable URLs are shown as their scheme alone.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		scheme, _, _ := strings.Cut(raw, ":")
		return scheme + ":…"
	}
	u.User = nil
	return u.String()
}

// validRemoteName reports whether name can name a remote: a ref name
// without "/", which separates it from the branch in origin/main.
func validRemoteName(name string) bool {
	return ValidRefName(name) && !strings.Contains(name, "/")
}

// loadRemoteConfig reads dir's remotes file; a missing file is no remote.
func loadRemoteConfig(dir string) (*remoteConfig, error) {
	cfg := &remoteConfig{remotes: map[string]string{}, upstreams: map[string]Upstream{}}
	path := filepath.Join(dir, remotesFileName)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := formatversion.Remotes.ReadHeader(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	body := data[remotesHeaderSize:]
	if len(data) < remotesHeaderSize || crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[12:]) ||
		bsoncore.Document(body).Validate() != nil {
		return nil, fmt.Errorf("%s: %w", path, errBadRemotesFile)
	}
	doc := bsoncore.Document(body)
	eachDoc(doc.Lookup("remotes"), func(d bsoncore.Document) {
		cfg.remotes[d.Lookup("name").StringValue()] = d.Lookup("url").StringValue()
	})
	eachDoc(doc.Lookup("upstreams"), func(d bsoncore.Document) {
		cfg.upstreams[d.Lookup("branch").StringValue()] = Upstream{Remote: d.Lookup("remote").StringValue(),
			Branch: d.Lookup("remoteBranch").StringValue()}
	})
	return cfg, nil
}

// eachDoc calls fn with each document of an array value.
func eachDoc(v bsoncore.Value, fn func(bsoncore.Document)) {
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			fn(d)
		}
	}
}

// save writes cfg to dir's remotes file durably.
func (cfg *remoteConfig) save(dir string) error {
	remotes := bsoncore.NewArrayBuilder()
	for _, name := range slices.Sorted(maps.Keys(cfg.remotes)) {
		remotes.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("name", name).
			AppendString("url", cfg.remotes[name]).Build())
	}
	ups := bsoncore.NewArrayBuilder()
	for _, branch := range slices.Sorted(maps.Keys(cfg.upstreams)) {
		u := cfg.upstreams[branch]
		ups.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("branch", branch).
			AppendString("remote", u.Remote).AppendString("remoteBranch", u.Branch).Build())
	}
	body := bsoncore.NewDocumentBuilder().AppendArray("remotes", remotes.Build()).
		AppendArray("upstreams", ups.Build()).Build()
	out := make([]byte, remotesHeaderSize, remotesHeaderSize+len(body))
	h := formatversion.Remotes.Header()
	copy(out, h[:])
	binary.LittleEndian.PutUint32(out[12:], crc32.Checksum(body, castagnoli))
	return durablefile.Replace(filepath.Join(dir, remotesFileName), append(out, body...), 0o644)
}
