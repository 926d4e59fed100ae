// Package s3blob is Dolt's blobstore.Blobstore on an S3-compatible object
// store, so that a Dolt chunk store (nbs.NewBSStore) can live in a bucket:
// what an s3:// remote is (docs/design/remotes.md). A blob is an object
// under the remote's prefix; its version is the object's ETag, and a
// check-and-put is a conditional PutObject (If-Match with the expected
// ETag, If-None-Match: * when the blob must not exist yet), so two writers
// of a store's manifest can never both win.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/dolthub/dolt/go/store/blobstore"
)

// Config says where a store's objects are and how to reach them.
type Config struct {
	Bucket, Prefix   string
	Endpoint, Region string // Endpoint "": AWS's
	PathStyle        bool   // bucket in the path, as most S3-compatible stores want
	AccessKey        string
	SecretKey        string
}

// ParseURL reads s3://bucket/prefix?endpoint=URL&region=R&pathStyle=true.
// The endpoint and region default to AWS_ENDPOINT_URL_S3 and AWS_REGION
// (else us-east-1); the credentials come from AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY.
func ParseURL(raw string) (Config, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("an s3 remote is s3://bucket/prefix[?endpoint=URL&region=R&pathStyle=true]")
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "pathStyle":
		default:
			return Config{}, fmt.Errorf("s3 remote: unknown parameter %q (endpoint, region, pathStyle)", k)
		}
	}
	cfg := Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"),
		Endpoint:  firstOf(q.Get("endpoint"), os.Getenv("AWS_ENDPOINT_URL_S3")),
		Region:    firstOf(q.Get("region"), os.Getenv("AWS_REGION"), "us-east-1"),
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	switch q.Get("pathStyle") {
	case "", "false":
	case "true":
		cfg.PathStyle = true
	default:
		return Config{}, fmt.Errorf("s3 remote: pathStyle is true or false, not %q", q.Get("pathStyle"))
	}
	return cfg, nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// Store is the blobstore of one bucket prefix.
type Store struct {
	client         *s3.Client
	bucket, prefix string
}

var _ blobstore.Blobstore = (*Store)(nil)

// New makes the store of cfg; it does not reach the bucket.
func New(cfg Config) *Store {
	opts := s3.Options{Region: cfg.Region, UsePathStyle: cfg.PathStyle}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	if cfg.AccessKey != "" {
		opts.Credentials = credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")
	}
	return &Store{client: s3.New(opts), bucket: cfg.Bucket, prefix: cfg.Prefix}
}

// Path is bucket/prefix.
func (s *Store) Path() string { return path.Join(s.bucket, s.prefix) }

func (s *Store) key(k string) string { return path.Join(s.prefix, k) }

// Exists reports whether the blob is there.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))})
	if isStatus(err, http.StatusNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Get reads a range of a blob, with the blob's size and version.
func (s *Store) Get(ctx context.Context, key string, br blobstore.BlobRange) (io.ReadCloser, uint64, string, error) {
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key))}
	if r := httpRange(br); r != "" {
		in.Range = aws.String(r)
	}
	out, err := s.client.GetObject(ctx, in)
	if isStatus(err, http.StatusNotFound) {
		return nil, 0, "", blobstore.NotFound{Key: "s3://" + path.Join(s.bucket, s.key(key))}
	}
	if err != nil {
		return nil, 0, "", err
	}
	size := uint64(aws.ToInt64(out.ContentLength))
	if cr := aws.ToString(out.ContentRange); cr != "" {
		if _, total, ok := strings.Cut(cr, "/"); ok {
			fmt.Sscan(total, &size)
		}
	}
	return out.Body, size, aws.ToString(out.ETag), nil
}

// httpRange is br as an HTTP Range header ("": the whole blob). Dolt's
// BlobRange keeps its offset and length unexported, with no accessor, so
// they are read by reflection (reading unexported fields is allowed).
func httpRange(br blobstore.BlobRange) string {
	v := reflect.ValueOf(br)
	offset, length := v.FieldByName("offset").Int(), v.FieldByName("length").Int()
	switch {
	case offset == 0 && length == 0:
		return ""
	case offset < 0:
		return fmt.Sprintf("bytes=%d", offset) // the last -offset bytes
	case length == 0:
		return fmt.Sprintf("bytes=%d-", offset)
	}
	return fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
}

// Put writes a blob whole.
func (s *Store) Put(ctx context.Context, key string, totalSize int64, reader io.Reader) (string, error) {
	return s.put(ctx, key, totalSize, reader, nil)
}

// CheckAndPut writes a blob only if its version is expectedVersion (""
// for a blob that must not exist yet).
func (s *Store) CheckAndPut(ctx context.Context, expectedVersion, key string, totalSize int64, reader io.Reader) (string, error) {
	ver, err := s.put(ctx, key, totalSize, reader, func(in *s3.PutObjectInput) {
		if expectedVersion == "" {
			in.IfNoneMatch = aws.String("*")
		} else {
			in.IfMatch = aws.String(expectedVersion)
		}
	})
	if isStatus(err, http.StatusPreconditionFailed) || isStatus(err, http.StatusConflict) {
		return "", blobstore.CheckAndPutError{Key: key, ExpectedVersion: expectedVersion, ActualVersion: "another"}
	}
	return ver, err
}

func (s *Store) put(ctx context.Context, key string, totalSize int64, reader io.Reader, cond func(*s3.PutObjectInput)) (string, error) {
	// The body must be seekable for the SDK to sign and retry it.
	body, ok := reader.(io.ReadSeeker)
	if !ok {
		data, err := io.ReadAll(reader)
		if err != nil {
			return "", err
		}
		body = bytes.NewReader(data)
		totalSize = int64(len(data))
	}
	in := &s3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(key)), Body: body,
		ContentLength: aws.Int64(totalSize)}
	if cond != nil {
		cond(in)
	}
	out, err := s.client.PutObject(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// Concatenate writes a blob made of the sources in order. S3's
// multipart copy wants parts of 5 MiB but the last, which a store's
// small blobs are not, so the sources are read and written whole.
func (s *Store) Concatenate(ctx context.Context, key string, sources []string) (string, error) {
	var buf bytes.Buffer
	for _, src := range sources {
		rc, _, _, err := s.Get(ctx, src, blobstore.AllRange)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(&buf, rc)
		rc.Close()
		if err != nil {
			return "", err
		}
	}
	return s.Put(ctx, key, int64(buf.Len()), bytes.NewReader(buf.Bytes()))
}

// isStatus reports whether err is an S3 response of that HTTP status.
func isStatus(err error, status int) bool {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == status {
		return true
	}
	var api smithy.APIError
	if status == http.StatusNotFound && errors.As(err, &api) {
		return api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound"
	}
	return false
}

// Children lists the names directly under the store's prefix whose own
// object leaf exists ("<prefix>/<name>/<leaf>"): the databases of a
// replica's bucket, each a store with a manifest.
func (s *Store) Children(ctx context.Context, leaf string) ([]string, error) {
	prefix := s.prefix
	if prefix != "" {
		prefix += "/"
	}
	var names []string
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket,
		Prefix: aws.String(prefix), Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, cp := range page.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")
			if ok, err := s.Exists(ctx, path.Join(name, leaf)); err != nil {
				return nil, err
			} else if ok {
				names = append(names, name)
			}
		}
	}
	return names, nil
}
