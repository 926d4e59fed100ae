package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"
)

// TestMongoshOperations drives mongosh's operator helpers against the real
// server: db.currentOp(), db.killOp(), db.setProfilingLevel(2) and the
// profile it leaves, db.serverStatus(), db.fsyncLock()/fsyncUnlock(),
// getLog, db.setLogLevel (global and per component), and
// db.shutdownServer(), after which the server exits 0.
func TestMongoshOperations(t *testing.T) {
	bin := mongoshPath(t)
	p := dumboproc.StartT(t, t.TempDir())
	out := mongosh(t, bin, p.Port(), `
		const ops = db.currentOp();
		print("currentOp", ops.ok, Array.isArray(ops.inprog) && ops.inprog.length > 0);
		print("killOp", db.killOp(123456).ok);
		print("profile was", db.setProfilingLevel(2).was);
		db.items.insertOne({_id: 1});
		print("profiled", db.system.profile.countDocuments({ns: "shop.items", op: "insert"}));
		print("profiling level", db.getProfilingStatus().was);
		db.setProfilingLevel(0);
		const ss = db.serverStatus();
		print("serverStatus", ss.ok, ss.locks.Global.acquireCount.w > 0, ss.connections.current > 0);
		print("fsyncLock", db.fsyncLock().lockCount);
		print("read while locked", db.items.countDocuments({}));
		print("locked in currentOp", db.adminCommand({currentOp: 1}).fsyncLock);
		print("fsyncUnlock", db.fsyncUnlock().lockCount);
		db.items.insertOne({_id: 2});
		const log = db.adminCommand({getLog: "global"});
		print("getLog", log.ok, log.log.length > 0, JSON.parse(log.log[0]).t["$date"] !== undefined);
		print("setLogLevel", db.setLogLevel(1).ok, db.setLogLevel(2, "storage").ok);
		const v = db.adminCommand({getParameter: 1, logComponentVerbosity: 1}).logComponentVerbosity;
		print("verbosity", v.verbosity, v.storage.verbosity);
	`)
	want := `currentOp 1 true
killOp 1
profile was 0
profiled 1
profiling level 2
serverStatus 1 true true
fsyncLock Long('1')
read while locked 1
locked in currentOp true
fsyncUnlock Long('0')
getLog 1 true true
setLogLevel 1 1
verbosity 1 2`
	if out != want {
		t.Fatalf("mongosh output:\n%s\nwant:\n%s", out, want)
	}
	cmd := exec.Command(bin, "--quiet", "--norc", p.URL(), "--eval", `db.getSiblingDB("admin").shutdownServer()`)
	cmd.Env = append(cmd.Environ(), "MONGOSH_NO_TELEMETRY=1", "HOME="+t.TempDir())
	cmd.CombinedOutput() // the connection closes as the server stops
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.Output(), "Terminating via shutdown command") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if code := p.StopT(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d after db.shutdownServer()", code)
	}
	if !strings.Contains(p.Output(), "Terminating via shutdown command") {
		t.Fatalf("the server did not log the shutdown command:\n%s", p.Output())
	}
}
