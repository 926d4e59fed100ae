package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestMongodFlags: --pidfilepath holds the pid while the server runs and
// goes at a clean stop; --bind_ip_all serves 127.0.0.1 (and ::1 where
// the host has IPv6); --fork and --bind_ip with --bind_ip_all are refused
// at start, naming the flag.
func TestMongodFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	pidFile := filepath.Join(t.TempDir(), "dumbodb.pid")
	p := dumboproc.StartT(t, t.TempDir(), "--bind_ip_all", "--pidfilepath", pidFile, "--maxConns", "50", "--slowms", "250")
	data, err := os.ReadFile(pidFile)
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(p.Pid()) {
		t.Fatalf("pid file %q (%v), want %d", data, err, p.Pid())
	}
	for _, host := range []string{"127.0.0.1", "::1"} {
		if host == "::1" {
			if l, err := net.Listen("tcp", "[::1]:0"); err != nil {
				continue // no IPv6 here
			} else {
				l.Close()
			}
		}
		uri := "mongodb://" + net.JoinHostPort(host, strconv.Itoa(p.Port())) + "/?directConnection=true"
		c, err := mongo.Connect(options.Client().ApplyURI(uri).SetTimeout(10 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Ping(context.Background(), nil); err != nil {
			t.Errorf("--bind_ip_all does not serve %s: %v", host, err)
		}
		c.Disconnect(context.Background())
	}
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after a clean stop: %v", err)
	}
	for _, args := range [][]string{{"--fork"}, {"--bind_ip", "127.0.0.1", "--bind_ip_all"}, {"--maxConns", "0"}} {
		var stderr bytes.Buffer
		code := run(append([]string{"--data-dir", t.TempDir()}, args...), &bytes.Buffer{}, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), args[0]) {
			t.Errorf("dumbodb %v: exit %d, %s", args, code, stderr.String())
		}
	}
}

// TestShutdownCommand: {shutdown: 1} from this host stops the server
// cleanly (exit 0, pid file removed), as db.shutdownServer() does.
func TestShutdownCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	pidFile := filepath.Join(t.TempDir(), "dumbodb.pid")
	p := dumboproc.StartT(t, t.TempDir(), "--pidfilepath", pidFile)
	c := client(t, p)
	// The server closes the connection instead of answering.
	c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "shutdown", Value: 1}, {Key: "timeoutSecs", Value: 5}})
	if code := p.StopT(t, syscall.Signal(0)); code != 0 { // waits for the exit
		t.Fatalf("exit %d after the shutdown command\n%s", code, p.Output())
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there: %v", err)
	}
}
