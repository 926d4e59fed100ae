package main

import (
	"context"
	bin "encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dumbodb/dumbodb/internal/dumboproc"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// rssBytes is a process's resident set size, from /proc.
func rssBytes(t testing.TB, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestMemoryStaysWithinTheDocumentedBounds drives a real server with what
// ran earlier servers out of memory (docs/design/limits.md has the bounds):
// 40 connections each sending 8 MiB of a 40 MiB message, then a connection
// opening cursors until the limit. The server's RSS must stay within the
// in-flight budget (with Go's garbage collector's slack) plus the per-cursor
// bound, the greedy connections must be dropped, and the server must serve.
func TestMemoryStaysWithinTheDocumentedBounds(t *testing.T) {
	const budgetMB = 32
	p := dumboproc.StartT(t, t.TempDir(), "--maxInFlightMB", strconv.Itoa(budgetMB), "--messageStallSeconds", "3")
	c := client(t, p)
	db := c.Database("shop")
	docs := make([]any, 200)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: strings.Repeat("x", 200)}}
	}
	if _, err := db.Collection("c").InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	base := rssBytes(t, pid)

	// Partial messages: each claims 40 MiB and sends 8 MiB.
	var conns []net.Conn
	dropped := 0
	for i := 0; i < 40; i++ {
		nc, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.Port()))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		hdr := make([]byte, 16)
		bin.LittleEndian.PutUint32(hdr, 40<<20)
		bin.LittleEndian.PutUint32(hdr[12:], 2013)
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(append(hdr, make([]byte, 8<<20)...)); err != nil {
			dropped++
		}
	}
	time.Sleep(500 * time.Millisecond) // let the server read what was sent
	peak := rssBytes(t, pid)
	// Each connection's buffers are counted in the budget, except 64 KiB of
	// each message; bufio buffers are 128 KiB a connection. Go's collector
	// may hold as much again as garbage before it runs.
	bound := int64(2*budgetMB<<20) + 40*(64<<10+128<<10) + 32<<20
	t.Logf("RSS %d MiB before, %d MiB with 40 partial messages (bound +%d MiB); %d writes refused", base>>20, peak>>20, bound>>20, dropped)
	if grew := peak - base; grew > bound {
		t.Fatalf("RSS grew by %d MiB with 40 partial messages, bound %d MiB", grew>>20, bound>>20)
	}
	for _, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(15 * time.Second))
		var one [1]byte
		if _, err := nc.Read(one[:]); err == nil {
			t.Fatal("a partial message got a reply")
		}
		nc.Close()
	}
	if err := c.Ping(context.Background(), nil); err != nil {
		t.Fatalf("the server stopped serving: %v", err)
	}

	// Cursors: one connection opens them until the limit.
	before := rssBytes(t, pid)
	opened := 0
	// One connection, so that the per-connection limit is the one met.
	c1, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://127.0.0.1:%d/", p.Port())).SetMaxPoolSize(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Disconnect(context.Background())
	coll := c1.Database("shop").Collection("c")
	for ; opened < 1100; opened++ {
		cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetBatchSize(1))
		if err != nil {
			break
		}
		_ = cur // left open on purpose
	}
	if opened > 1000 {
		t.Fatalf("opened %d cursors, the limit is 1000 per connection", opened)
	}
	const perCursor = 16 << 10
	grew := rssBytes(t, pid) - before
	t.Logf("%d cursors: RSS +%d KiB", opened, grew>>10)
	if grew > int64(opened)*perCursor+16<<20 {
		t.Fatalf("RSS grew by %d KiB for %d cursors (bound %d KiB each)", grew>>10, opened, perCursor>>10)
	}
}

// TestServerStatusResidentIsTheProcesss: serverStatus.mem.resident (MB)
// is the server process's resident size as the kernel counts it
// (/proc/<pid>/status VmRSS), within what moves between the two reads.
func TestServerStatusResidentIsTheProcesss(t *testing.T) {
	p := dumboproc.StartT(t, t.TempDir())
	var st struct {
		Mem struct {
			Resident int64 `bson:"resident"`
		} `bson:"mem"`
	}
	if err := client(t, p).Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		t.Skip("no /proc here")
	}
	var rssKB int64
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &rssKB)
		}
	}
	if diff := st.Mem.Resident - rssKB>>10; rssKB == 0 || diff < -16 || diff > 16 {
		t.Errorf("serverStatus.mem.resident %d MB, VmRSS %d MB", st.Mem.Resident, rssKB>>10)
	}
}
