package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// EchoFloorBenchmark is the raw client's ping against a server that does
// nothing but answer: the least server CPU and latency a round trip costs
// on this machine, which no server's Raw rows can go below. Its server
// CPU µs/op is the floor under the CPU goals (goals.go, docs/perf/README.md):
// of one connection under the findOne goal, and with EchoFloor64Benchmark's
// 64 connections under the goal for inserts from 64.
const (
	EchoFloorBenchmark   = "Floor/RawEcho"
	EchoFloor64Benchmark = "Floor/RawEcho/64"
)

// EchoServer starts a process that runs ServeEcho and returns its address
// and pid, and how to stop it. dumbobench --start provides one (the
// process must be apart from the client, so that its CPU is its own).
type EchoServer func(ctx context.Context) (addr string, pid int, stop func(), err error)

func echoBenchmarks() []Benchmark {
	return []Benchmark{
		{Name: EchoFloorBenchmark, Group: GroupFloor, Unit: "op", Machine: true, Setup: setupEcho(1)},
		{Name: EchoFloor64Benchmark, Group: GroupFloor, Unit: "op", Machine: true, Clients: 64, Setup: setupEcho(64)},
	}
}

// setupEcho pings the echo server from clients connections at once.
func setupEcho(clients int) func(context.Context, *Env) (*Workload, error) {
	return func(ctx context.Context, e *Env) (*Workload, error) {
		if e.Cfg.Echo == nil {
			return nil, errNotApplicable{"needs a server process of its own (--start)"}
		}
		addr, pid, stop, err := e.Cfg.Echo(ctx)
		if err != nil {
			return nil, err
		}
		cs, err := dialRawClients(ctx, addr, clients, simpleCommand("admin", "ping"), nil)
		if err != nil {
			stop()
			return nil, err
		}
		return &Workload{
			Pid:   pid,
			Close: func() { cs.close(); stop() },
			Call: func(context.Context, int64) error {
				return cs.do(func(c *rawClient) error {
					_, err := c.conn.command(c.msg)
					return err
				})
			},
		}, nil
	}
}

// ServeEcho answers every message on ln's connections with an OP_MSG
// {ok: 1}, reading each request just far enough to frame it: a server
// with no work, through the same sockets and Go runtime as DumboDB's.
func ServeEcho(ln net.Listener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go echoConn(nc)
	}
}

func echoConn(nc net.Conn) {
	defer nc.Close()
	r := bufio.NewReaderSize(nc, 64<<10)
	body := bsoncore.BuildDocument(nil, bsoncore.AppendDoubleElement(nil, "ok", 1))
	reply, _ := frame(body, "", nil)
	for {
		var hdr [headerLen]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		size := int(binary.LittleEndian.Uint32(hdr[:]))
		if size < headerLen || size > maxReply {
			return
		}
		if _, err := r.Discard(size - headerLen); err != nil {
			return
		}
		copy(reply[8:12], hdr[4:8]) // responseTo: the request's id
		if _, err := nc.Write(reply); err != nil {
			return
		}
	}
}
