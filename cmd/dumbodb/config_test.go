package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dumbodb.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFileAndEnvironment: mongod's keys and the dumbodb section
// set the flags; the command line wins over the file and the file over
// DUMBODB_* variables, which win over the defaults; an unknown key, a bad
// value and an unsupported one are start-up errors naming the key.
func TestConfigFileAndEnvironment(t *testing.T) {
	conf := writeConfig(t, `
net:
  port: 12345
  bindIp: 127.0.0.1
  unixDomainSocket:
    enabled: true
    pathPrefix: /tmp/dd
storage:
  dbPath: /srv/dumbo
systemLog:
  destination: file
  path: /var/log/dumbodb.log
  logAppend: true
  quiet: true
  verbosity: 1
security:
  authorization: enabled
operationProfiling:
  mode: all
  filter: '{"op": "query"}'
  slowOpThresholdMs: 250
  slowOpSampleRate: 0.5
setParameter:
  transactionLifetimeLimitSeconds: 30
  authenticationMechanisms: SCRAM-SHA-256
dumbodb:
  cacheSizeMB: 300
  httpAddress: 127.0.0.1:9090
`)
	t.Setenv("DUMBODB_SYNCDELAY", "7")
	t.Setenv("DUMBODB_PORT", "999")
	t.Setenv("DUMBODB_CACHESIZEMB", "1")
	o, err := parseFlags([]string{"-f", conf, "--slowms", "40", "-vv"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"port (file over environment)", o.port, 12345},
		{"syncdelay (environment)", o.syncdelay, 7},
		{"slowms (command line over file)", o.slowMS, 40},
		{"dbPath", o.dataDir, "/srv/dumbo"},
		{"unix socket", o.unixSocket, "/tmp/dd/mongodb-12345.sock"},
		{"log path", o.logPath, "/var/log/dumbodb.log"},
		{"logAppend", o.logAppend, true},
		{"quiet", o.quiet, true},
		{"verbosity (-vv over the file's 1)", o.verbosity, 2},
		{"authorization", o.auth, true},
		{"sample rate", o.sampleRate, 0.5},
		{"profiling mode all", o.profile, 2},
		{"profiling filter", o.profileFilter, `{"op": "query"}`},
		{"setParameter", strings.Join(o.setParams, " "), "authenticationMechanisms=SCRAM-SHA-256 transactionLifetimeLimitSeconds=30"},
		{"dumbodb.cacheSizeMB", o.cacheMB, 300},
		{"dumbodb.httpAddress", o.httpAddress, "127.0.0.1:9090"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	for text, want := range map[string]string{
		"net:\n  prot: 1\n":                       "net.prot: unknown",
		"net:\n  port: many\n":                    "net.port: parse error",
		"security:\n  authorization: yes\n":       "security.authorization: must be enabled or disabled",
		"operationProfiling:\n  mode: often\n":    "operationProfiling.mode: must be off, slowOp or all",
		"operationProfiling:\n  filter: '{op'\n":  "--profileFilter must be a document",
		"dumbodb:\n  noSuchFlag: 1\n":             "dumbodb.noSuchFlag: no setting",
		"systemLog:\n  destination: syslog\n":     "systemLog.destination: \"syslog\" is not supported",
		"setParameter:\n  logLevel: many\n":       "--setParameter \"logLevel=many\"",
		"processManagement:\n  fork: true\n":      "--fork is not supported",
		"net:\n  bindIp: [127.0.0.1, 10.0.0.1]\n": "net.bindIp: a list is not a setting's value",
	} {
		var stderr strings.Builder
		if _, err := parseFlags([]string{"--config", writeConfig(t, text)}, &stderr); err == nil || !strings.Contains(stderr.String(), want) {
			t.Errorf("%q: %v\n%s", text, err, stderr.String())
		}
	}
}

// TestLogPathAndRotation: --logpath writes the log to a file, renaming
// one left there unless --logappend; logRotate and SIGUSR1 rename it
// aside and start a new one; --quiet leaves connections out;
// --setParameter sets a parameter at start, and setParameter logLevel
// the process's log level.
func TestLogPathAndRotation(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "dumbodb.log")
	if err := os.WriteFile(logPath, []byte("an earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := dumboproc.StartT(t, filepath.Join(dir, "data"), "--logpath", logPath, "--quiet", "--setParameter", "transactionLifetimeLimitSeconds=33")
	ctx := context.Background()
	c := client(t, p)
	var got bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}}).Decode(&got); err != nil || fmt.Sprint(got["transactionLifetimeLimitSeconds"]) != "33" {
		t.Errorf("--setParameter: %v (%v)", got, err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "logLevel", Value: 2}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}}).Decode(&got); err != nil || fmt.Sprint(got["logLevel"]) != "2" {
		t.Errorf("logLevel after setParameter: %v (%v)", got, err)
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "logRotate", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(p.Pid(), syscall.SIGUSR1)
	// The earlier run's file, the command's rotation and the signal's:
	// three files aside, and the signal's rotation logged.
	var files []string
	all := ""
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		files, _ = filepath.Glob(logPath + ".*")
		all = ""
		for _, f := range append(files, logPath) {
			data, _ := os.ReadFile(f)
			all += string(data)
		}
		if len(files) >= 3 && strings.Contains(all, "Log rotation initiated") {
			break
		}
	}
	if len(files) < 3 {
		t.Errorf("rotated files %v, want the earlier run's and two rotations", files)
	}
	for _, want := range []string{"an earlier run", "DumboDB started", "Log rotation initiated"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log files lack %q", want)
		}
	}
	if strings.Contains(all, "Connection accepted") {
		t.Error("--quiet logged a connection")
	}
}

// TestContainerEnvironment: the image's settings come from DUMBODB_*
// variables, and a flag given after the image's name wins, --bind_ip
// over DUMBODB_BIND_IP_ALL included; ping's default port follows
// DUMBODB_PORT.
func TestContainerEnvironment(t *testing.T) {
	t.Setenv("DUMBODB_DATA_DIR", "/data")
	t.Setenv("DUMBODB_BIND_IP_ALL", "true")
	t.Setenv("DUMBODB_PORT", "28017")
	t.Setenv("DUMBODB_AUTH", "true")
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.dataDir != "/data" || !o.bindIPAll || o.bindIP != "" || o.port != 28017 || !o.auth {
		t.Fatalf("from the environment: %+v %v", o, err)
	}
	o, err = parseFlags([]string{"--bind_ip", "127.0.0.1", "--dbpath", "/elsewhere"}, io.Discard)
	if err != nil || o.bindIPAll || o.bindIP != "127.0.0.1" || o.dataDir != "/elsewhere" {
		t.Fatalf("flags over the environment: %+v %v", o, err)
	}
	if p := pingDefaultPort(); p != 28017 {
		t.Errorf("ping's default port %d", p)
	}
}

// TestConfigFileFromTheEnvironment: DUMBODB_CONFIG names the config file
// when --config does not, and the file still wins over DUMBODB_<FLAG>.
func TestConfigFileFromTheEnvironment(t *testing.T) {
	t.Setenv("DUMBODB_CONFIG", writeConfig(t, "net:\n  port: 23456\n"))
	t.Setenv("DUMBODB_PORT", "999")
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.port != 23456 {
		t.Fatalf("port %d, %v", o.port, err)
	}
	o, err = parseFlags([]string{"--config", writeConfig(t, "net:\n  port: 34567\n")}, io.Discard)
	if err != nil || o.port != 34567 {
		t.Fatalf("--config over DUMBODB_CONFIG: port %d, %v", o.port, err)
	}
}
