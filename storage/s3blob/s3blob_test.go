package s3blob

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dumbodb/dumbodb/internal/seaweed"

	"github.com/dolthub/dolt/go/store/blobstore"
)

func getString(t *testing.T, s *Store, key string, br blobstore.BlobRange) (string, uint64, string) {
	t.Helper()
	rc, size, ver, err := s.Get(context.Background(), key, br)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), size, ver
}

// TestBlobstoreOnSeaweedFS: ranges, versions, check-and-put and
// concatenation against a real S3-compatible store.
func TestBlobstoreOnSeaweedFS(t *testing.T) {
	store := seaweed.Start(t)
	cfg, err := ParseURL(store.URL("unit"))
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	ctx := context.Background()
	if ok, err := s.Exists(ctx, "a"); ok || err != nil {
		t.Fatalf("Exists of a missing blob: %v %v", ok, err)
	}
	if _, _, _, err := s.Get(ctx, "a", blobstore.AllRange); !blobstore.IsNotFoundError(err) {
		t.Fatalf("Get of a missing blob: %v", err)
	}
	v1, err := s.CheckAndPut(ctx, "", "a", 10, strings.NewReader("0123456789"))
	if err != nil || v1 == "" {
		t.Fatalf("first CheckAndPut: %q %v", v1, err)
	}
	if _, err := s.CheckAndPut(ctx, "", "a", 3, strings.NewReader("xyz")); !blobstore.IsCheckAndPutError(err) {
		t.Errorf("CheckAndPut of an existing blob as new: %v", err)
	}
	if _, err := s.CheckAndPut(ctx, `"not-the-etag"`, "a", 3, strings.NewReader("xyz")); !blobstore.IsCheckAndPutError(err) {
		t.Errorf("CheckAndPut with a stale version: %v", err)
	}
	for _, c := range []struct {
		br   blobstore.BlobRange
		want string
	}{
		{blobstore.AllRange, "0123456789"},
		{blobstore.NewBlobRange(2, 3), "234"},
		{blobstore.NewBlobRange(7, 0), "789"},
		{blobstore.NewBlobRange(-4, 0), "6789"},
	} {
		if got, size, ver := getString(t, s, "a", c.br); got != c.want || size != 10 || ver != v1 {
			t.Errorf("Get %+v = %q, size %d, version %q; want %q, 10, %q", c.br, got, size, ver, c.want, v1)
		}
	}
	v2, err := s.CheckAndPut(ctx, v1, "a", 3, strings.NewReader("abc"))
	if err != nil || v2 == v1 {
		t.Fatalf("CheckAndPut with the version: %q %v", v2, err)
	}
	if _, err := s.Put(ctx, "b", 3, io.LimitReader(strings.NewReader("defgh"), 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Concatenate(ctx, "c", []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := getString(t, s, "c", blobstore.AllRange); got != "abcdef" {
		t.Errorf("concatenation %q", got)
	}
}

func TestParseURL(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-3")
	cfg, err := ParseURL("s3://bkt/some/prefix?endpoint=http://h:1&pathStyle=true")
	if err != nil || cfg.Bucket != "bkt" || cfg.Prefix != "some/prefix" || cfg.Endpoint != "http://h:1" || !cfg.PathStyle || cfg.Region != "eu-west-3" {
		t.Errorf("ParseURL: %+v %v", cfg, err)
	}
	for _, bad := range []string{"s3:///nobucket", "s3://b/p?pathStyle=maybe", "s3://b/p?colour=red", "http://b/p"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) accepted", bad)
		}
	}
}
