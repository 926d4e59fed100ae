package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
	"github.com/dumbodb/dumbodb/internal/testload"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func TestMain(m *testing.M) { dumboproc.Main(m) }

// client connects to p; it disconnects when t ends.
func client(t testing.TB, p *dumboproc.Proc) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(p.URL()).SetTimeout(testload.Timeout(20 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

func TestVersionAndHelp(t *testing.T) {
	binary := dumboproc.Binary(t)
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "dumbodb version") {
		t.Fatalf("--version: %v %s", err, out)
	}
	out, err = exec.Command(binary, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-data-dir") || !strings.Contains(string(out), "-bind_ip") {
		t.Fatalf("--help: %v %s", err, out)
	}
	if err := exec.Command(binary, "--no-such-flag").Run(); err == nil {
		t.Fatal("unknown flag accepted")
	}
	out, err = exec.Command(binary, "nosuchsubcommand").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), `unknown subcommand or argument "nosuchsubcommand"`) ||
		!strings.Contains(string(out), "ping|inspect|import") {
		t.Fatalf("an unknown subcommand: %v %s", err, out)
	}
}

func TestStartLogStopAndRestart(t *testing.T) {
	dir := t.TempDir()
	dumboproc.Binary(t) // a first call builds it: not part of the start-up
	start := time.Now()
	p := dumboproc.StartT(t, dir)
	if d := time.Since(start); d > testload.Timeout(10*time.Second) {
		t.Errorf("start took %v", d)
	}
	coll := client(t, p).Database("app").Collection("c")
	if _, err := coll.InsertOne(context.Background(), bson.M{"_id": "kept", "v": 1}); err != nil {
		t.Fatal(err)
	}
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.Output())
	}
	// Every log line is one JSON object in mongod's shape.
	sc := bufio.NewScanner(bytes.NewReader([]byte(p.Output())))
	lines := 0
	for sc.Scan() {
		var m bson.M
		if err := bson.UnmarshalExtJSON(sc.Bytes(), false, &m); err != nil || m["msg"] == nil || m["t"] == nil || m["s"] == nil || m["id"] == nil || m["ctx"] == nil {
			t.Errorf("log line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines < 3 {
		t.Errorf("only %d log lines", lines)
	}

	p = dumboproc.StartT(t, dir, "--dbpath", dir, "--author", "Ops <ops@example.com>") // the mongod alias
	var got bson.M
	err := client(t, p).Database("app").Collection("c").FindOne(context.Background(), bson.M{"_id": "kept"}).Decode(&got)
	if err != nil || got["v"] != int32(1) {
		t.Fatalf("after restart: %v %v", got, err)
	}
	var commit bson.M
	if err := client(t, p).Database("app").RunCommand(context.Background(),
		bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}}).Decode(&commit); err != nil || commit["author"] != "Ops <ops@example.com>" {
		t.Fatalf("commit with the configured author: %v %v", commit, err)
	}
	if code := p.StopT(t, syscall.SIGINT); code != 0 {
		t.Fatalf("exit code %d after SIGINT", code)
	}
}

func TestSecondServerOnSameDataDirRefuses(t *testing.T) {
	dir := t.TempDir()
	dumboproc.StartT(t, dir)
	port, err := dumboproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dumboproc.Binary(t), "--data-dir", dir, "--port", fmt.Sprint(port)).CombinedOutput()
	if err == nil {
		t.Fatal("second server started")
	}
	if !strings.Contains(string(out), "in use by another dumbodb") {
		t.Fatalf("unclear message: %s", out)
	}
}

func TestUnixSocketAndBindIPs(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(t.TempDir(), "dumbodb.sock")
	p := dumboproc.StartT(t, dir, "--unixSocket", sock, "--bind_ip", "127.0.0.1,127.0.0.2")
	for _, addr := range []string{fmt.Sprintf("127.0.0.2:%d", p.Port())} {
		if err := ping(addr, 5*time.Second, nil); err != nil {
			t.Errorf("ping %s: %v", addr, err)
		}
	}
	uri := "mongodb://" + strings.ReplaceAll(sock, "/", "%2F")
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(testload.Timeout(20 * time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	if err := c.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping over unix socket: %v", err)
	}
	p.StopT(t, syscall.SIGTERM)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
}

func TestPingSubcommand(t *testing.T) {
	binary := dumboproc.Binary(t)
	p := dumboproc.StartT(t, t.TempDir())
	out, err := exec.Command(binary, "ping", "--port", fmt.Sprint(p.Port())).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("ping: %v %s", err, out)
	}
	// Without --port: the port of the DUMBODB_CONFIG file, over DUMBODB_PORT.
	cmd := exec.Command(binary, "ping")
	cmd.Env = append(os.Environ(), "DUMBODB_PORT=1", "DUMBODB_CONFIG="+writeConfig(t, fmt.Sprintf("net:\n  port: %d\n", p.Port())))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ping with the port of DUMBODB_CONFIG: %v %s", err, out)
	}
	p.StopT(t, syscall.SIGTERM)
	if err := exec.Command(binary, "ping", "--port", fmt.Sprint(p.Port()), "--timeout", "1s").Run(); err == nil {
		t.Fatal("ping succeeded against a stopped server")
	}
}

// TestIdleDatabaseSeconds: the flag reaches storage (a database unused for
// a second closes and reopens with its data), and 0 means never.
func TestIdleDatabaseSeconds(t *testing.T) {
	if got := idleOption(0); got >= 0 {
		t.Errorf("--idleDatabaseSeconds 0 is timeout %v, want never (negative)", got)
	}
	p := dumboproc.StartT(t, t.TempDir(), "--idleDatabaseSeconds", "1")
	c := client(t, p)
	ctx := context.Background()
	coll := c.Database("app").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "kept"}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var st struct {
			StorageEngine bson.M `bson:"storageEngine"`
		}
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		engine := st.StorageEngine
		if engine["openDatabases"] == int64(0) && engine["idleDatabaseCloses"] == int64(1) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle database did not close: %v", engine)
		}
	}
	if n, err := coll.CountDocuments(ctx, bson.M{"_id": "kept"}); err != nil || n != 1 {
		t.Fatalf("after reopening: %d, %v", n, err)
	}
}

// --heapProfile writes the live heap when a signal stops the server: a
// gzipped pprof profile whose sample types are the heap's.
func TestHeapProfileAtStop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "heap.prof")
	p := dumboproc.StartT(t, filepath.Join(dir, "data"), "--heapProfile="+path)
	if _, err := client(t, p).Database("db").Collection("c").InsertOne(context.Background(), bson.M{"_id": 1}); err != nil {
		t.Fatal(err)
	}
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("not a gzipped profile: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(raw, []byte("inuse_space")) {
		t.Fatalf("no heap profile (%d bytes, %v)", len(raw), err)
	}
}

// TestHeapSamplingOnlyForAProfile: the runtime's records of sampled
// allocations grow under a workload only when --heapProfile asks for
// them (sampleHeapFor).
func TestHeapSamplingOnlyForAProfile(t *testing.T) {
	growth := func(args ...string) int64 {
		dir := t.TempDir()
		p := dumboproc.StartT(t, filepath.Join(dir, "data"), args...)
		c := client(t, p)
		before := profilingBytes(t, c)
		coll := c.Database("db").Collection("c")
		pad := strings.Repeat("x", 1000)
		for batch := range 40 {
			docs := make([]any, 500)
			for i := range docs {
				docs[i] = bson.M{"_id": batch*500 + i, "pad": pad, "n": i}
			}
			if _, err := coll.InsertMany(context.Background(), docs); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.UpdateMany(context.Background(), bson.M{"n": bson.M{"$lt": 50}}, bson.M{"$inc": bson.M{"n": 1}}); err != nil {
				t.Fatal(err)
			}
		}
		return profilingBytes(t, c) - before
	}
	if g := growth(); g != 0 {
		t.Errorf("without --heapProfile the profiling records grew by %d bytes", g)
	}
	if g := growth("--heapProfile=" + filepath.Join(t.TempDir(), "heap.prof")); g <= 0 {
		t.Errorf("with --heapProfile the profiling records grew by %d bytes, want the workload's allocations sampled", g)
	}
}

func profilingBytes(t *testing.T, c *mongo.Client) int64 {
	t.Helper()
	raw, err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	n, ok := raw.Lookup("goMemory", "profilingBytes").AsInt64OK()
	if !ok {
		t.Fatalf("serverStatus has no goMemory.profilingBytes")
	}
	return n
}
