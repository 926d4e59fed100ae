// Package seaweed runs SeaweedFS as a real S3-compatible object store for
// the tests of s3:// remotes: `weed mini` on 127.0.0.1 ports of its own,
// with one bucket and the test's credentials, stopped when the test ends.
// The binary is .tools/weed (make weed builds it from the Go module
// proxy), or $DUMBODB_WEED.
package seaweed

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Credentials the store and its clients share.
const (
	AccessKey = "dumbotest"
	SecretKey = "dumbotest-secret"
	Bucket    = "dumbo"
)

// S3 is a running store.
type S3 struct {
	Endpoint string // http://127.0.0.1:PORT
}

// Binary is the weed binary, or "" when it is not built.
func Binary() string {
	if p := os.Getenv("DUMBODB_WEED"); p != "" {
		return p
	}
	dir, err := os.Getwd()
	for err == nil {
		p := filepath.Join(dir, ".tools", "weed")
		if _, serr := os.Stat(p); serr == nil {
			return p
		}
		if _, serr := os.Stat(filepath.Join(dir, "go.mod")); serr == nil {
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
	return ""
}

// Start runs a store for t and sets AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY for t's clients. It fails t when SeaweedFS is not
// built or does not answer.
func Start(t *testing.T) *S3 {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Fatal("SeaweedFS is not built: run `make weed`, which builds .tools/weed from the Go module proxy (about 4 minutes on 2 cores), or set DUMBODB_WEED")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	ports := freePorts(t, 4)
	s3Port := ports[3]
	var out bytes.Buffer
	cmd := exec.Command(bin, "mini", "-dir="+t.TempDir(), "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.port="+strconv.Itoa(ports[0]), "-volume.port="+strconv.Itoa(ports[1]),
		"-filer.port="+strconv.Itoa(ports[2]), "-s3.port="+strconv.Itoa(s3Port),
		"-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
		"-master.telemetry=false", "-bucket="+Bucket)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+AccessKey, "AWS_SECRET_ACCESS_KEY="+SecretKey)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start SeaweedFS: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	s := &S3{Endpoint: "http://127.0.0.1:" + strconv.Itoa(s3Port)}
	if err := s.waitBucket(90 * time.Second); err != nil {
		t.Fatalf("SeaweedFS did not serve bucket %s: %v\n%s", Bucket, err, out.String())
	}
	return s
}

// URL is an s3:// remote URL of prefix in the store's bucket.
func (s *S3) URL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&pathStyle=true&region=us-east-1", Bucket, prefix, s.Endpoint)
}

// waitBucket waits until the S3 port answers for the bucket (any HTTP
// answer but a refused connection, a 404 or a 5xx: the bucket is made at
// start-up, after the port opens).
func (s *S3) waitBucket(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		resp, err := http.Get(s.Endpoint + "/" + Bucket)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound && resp.StatusCode < 500 {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

// freePorts are n ports free on 127.0.0.1 that, with 10000 added (where
// SeaweedFS puts its gRPC ports), are free too.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var out []int
	for len(out) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		if g, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000)); err == nil {
			g.Close()
			out = append(out, port)
		}
	}
	return out
}
