package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// binary is the dumbodb executable built once for these tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dumbodb-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "dumbodb")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build dumbodb: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a dumbodb process started by a test.
type proc struct {
	cmd    *exec.Cmd
	port   int
	stdout *bytes.Buffer
	done   chan error
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProc starts dumbodb on a free port and waits until it answers.
func startProc(t *testing.T, dataDir string, extra ...string) *proc {
	t.Helper()
	p := &proc{port: freePort(t), stdout: &bytes.Buffer{}, done: make(chan error, 1)}
	args := append([]string{"--data-dir", dataDir, "--port", fmt.Sprint(p.port)}, extra...)
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.cmd.Process.Kill() })
	deadline := time.Now().Add(20 * time.Second)
	for ping(fmt.Sprintf("127.0.0.1:%d", p.port), time.Second) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("server did not start:\n%s", p.stdout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// stop sends sig and returns the exit code.
func (p *proc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not stop on %v", sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) client(t *testing.T) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://127.0.0.1:%d/", p.port)).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

func TestVersionAndHelp(t *testing.T) {
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
}

func TestStartLogStopAndRestart(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	p := startProc(t, dir)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("start took %v", d)
	}
	coll := p.client(t).Database("app").Collection("c")
	if _, err := coll.InsertOne(context.Background(), bson.M{"_id": "kept", "v": 1}); err != nil {
		t.Fatal(err)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM:\n%s", code, p.stdout)
	}
	// Every log line is one JSON object in mongod's shape.
	sc := bufio.NewScanner(bytes.NewReader(p.stdout.Bytes()))
	lines := 0
	for sc.Scan() {
		var m bson.M
		if err := bson.UnmarshalExtJSON(sc.Bytes(), false, &m); err != nil || m["msg"] == nil || m["t"] == nil || m["s"] == nil {
			t.Errorf("log line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines < 3 {
		t.Errorf("only %d log lines", lines)
	}

	p = startProc(t, dir, "--dbpath", dir, "--author", "Ops <ops@example.com>") // the mongod alias
	var got bson.M
	err := p.client(t).Database("app").Collection("c").FindOne(context.Background(), bson.M{"_id": "kept"}).Decode(&got)
	if err != nil || got["v"] != int32(1) {
		t.Fatalf("after restart: %v %v", got, err)
	}
	var commit bson.M
	if err := p.client(t).Database("app").RunCommand(context.Background(),
		bson.D{{Key: "dumboCommit", Value: 1}, {Key: "message", Value: "m"}}).Decode(&commit); err != nil || commit["author"] != "Ops <ops@example.com>" {
		t.Fatalf("commit with the configured author: %v %v", commit, err)
	}
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Fatalf("exit code %d after SIGINT", code)
	}
}

func TestSecondServerOnSameDataDirRefuses(t *testing.T) {
	dir := t.TempDir()
	startProc(t, dir)
	out, err := exec.Command(binary, "--data-dir", dir, "--port", fmt.Sprint(freePort(t))).CombinedOutput()
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
	p := startProc(t, dir, "--unixSocket", sock, "--bind_ip", "127.0.0.1,127.0.0.2")
	for _, addr := range []string{fmt.Sprintf("127.0.0.2:%d", p.port)} {
		if err := ping(addr, 5*time.Second); err != nil {
			t.Errorf("ping %s: %v", addr, err)
		}
	}
	uri := "mongodb://" + strings.ReplaceAll(sock, "/", "%2F")
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(20 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	if err := c.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping over unix socket: %v", err)
	}
	p.stop(t, syscall.SIGTERM)
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
}

func TestPingSubcommand(t *testing.T) {
	p := startProc(t, t.TempDir())
	out, err := exec.Command(binary, "ping", "--port", fmt.Sprint(p.port)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("ping: %v %s", err, out)
	}
	p.stop(t, syscall.SIGTERM)
	if err := exec.Command(binary, "ping", "--port", fmt.Sprint(p.port), "--timeout", "1s").Run(); err == nil {
		t.Fatal("ping succeeded against a stopped server")
	}
}

// TestIdleDatabaseSeconds: the flag reaches storage (a database unused for
// a second closes and reopens with its data), and 0 means never.
func TestIdleDatabaseSeconds(t *testing.T) {
	if got := idleOption(0); got >= 0 {
		t.Errorf("--idleDatabaseSeconds 0 is timeout %v, want never (negative)", got)
	}
	p := startProc(t, t.TempDir(), "--idleDatabaseSeconds", "1")
	c := p.client(t)
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
