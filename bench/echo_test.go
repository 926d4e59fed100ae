package bench

import (
	"context"
	"net"
	"testing"
)

// TestEchoServerAnswersEachRequest: the floor's server answers hello and
// then every request of a connection, each reply to its own request id,
// and the raw client reads each as ok: 1.
func TestEchoServerAnswersEachRequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ServeEcho(ln) }()
	c, err := dialRaw(context.Background(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	insert, _ := frame(command("db", func(d []byte) []byte { return d }), "documents", [][]byte{make([]byte, 5000)})
	for i, msg := range [][]byte{simpleCommand("admin", "ping"), insert, simpleCommand("admin", "ping")} {
		if _, err := c.command(msg); err != nil { // command checks responseTo
			t.Fatalf("request %d: %v", i, err)
		}
	}
	c.close()
	ln.Close()
	if err := <-done; err != nil {
		t.Fatalf("ServeEcho after its listener closed: %v", err)
	}
}

// TestEchoFloorFromManyConnections: Floor/RawEcho/64's workload gives
// each concurrent call a connection of its own, and every reply reaches
// the call that sent its request.
func TestEchoFloorFromManyConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go ServeEcho(ln)
	stopped := false
	cfg := &Config{Echo: func(context.Context) (string, int, func(), error) {
		return ln.Addr().String(), 0, func() { stopped = true; ln.Close() }, nil
	}}
	const clients = 8
	w, err := setupEcho(clients)(context.Background(), &Env{Cfg: cfg})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, clients)
	for range clients {
		go func() {
			for i := range 50 {
				if err := w.Call(context.Background(), int64(i)); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if !stopped {
		t.Fatal("closing the workload left the echo server running")
	}
}
