package server

import (
	"net"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// awaitReturns runs p.await and fails unless it returns well before its
// one-minute window: it must have seen bytes, end of file or another
// command, or declined to spin.
func awaitReturns(t *testing.T, p *busyPoller, s *Server) {
	t.Helper()
	done := make(chan struct{})
	go func() { p.await(s); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("await kept spinning")
	}
}

// pollerPair is a loopback connection and a poller with a one-minute
// window on its server end.
func pollerPair(t *testing.T) (client, server net.Conn, p busyPoller) {
	client, server = tcpPair(t)
	p = newBusyPoller(server, time.Minute)
	if p.rc == nil {
		t.Skip("a single processor: the poller never spins")
	}
	return client, server, p
}

func TestBusyPollerReadable(t *testing.T) {
	client, server, p := pollerPair(t)
	if p.readable() {
		t.Fatal("readable before the client wrote")
	}
	client.Write([]byte("x"))
	awaitReturns(t, &p, &Server{})
	if !p.readable() {
		t.Fatal("not readable after the client wrote")
	}
	var b [1]byte
	server.Read(b[:]) // peeking consumed nothing
	if b[0] != 'x' || p.readable() {
		t.Fatalf("read %q; readable after draining: %v", b[:], p.readable())
	}
	if n := testing.AllocsPerRun(100, func() { p.readable() }); n != 0 {
		t.Fatalf("a peek allocates %v times: the spin would feed the collector", n)
	}
	client.Close()
	awaitReturns(t, &p, &Server{})
	if !p.readable() {
		t.Fatal("end of file must end the spin")
	}
}

func TestBusyPollerGivesWay(t *testing.T) {
	_, server, p := pollerPair(t)
	busy := &Server{}
	busy.running.Store(1)
	awaitReturns(t, &p, busy) // a command runs: no spinning
	other := &Server{}
	other.spinning.Store(true)
	awaitReturns(t, &p, other) // another connection spins already

	// A command that starts while the connection spins stops the spin.
	s := &Server{}
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.running.Add(1)
	}()
	awaitReturns(t, &p, s)
	if s.spinning.Load() {
		t.Fatal("the spin token was not released")
	}
	if off := newBusyPoller(server, 0); off.rc != nil {
		t.Fatal("a zero window must turn busy polling off")
	}
}
