package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"dumbodb/wire"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// runPing is `dumbodb ping [--host H] [--port N]`: it sends {ping: 1} over the
// wire protocol and exits 0 when the server answers ok: 1. The Docker
// healthcheck uses it.
func runPing(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dumbodb ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "server address")
	port := fs.Int("port", 27017, "server port")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := ping(net.JoinHostPort(*host, strconv.Itoa(*port)), *timeout); err != nil {
		fmt.Fprintf(stderr, "dumbodb ping: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

func ping(addr string, timeout time.Duration) error {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	cmd := bsoncore.NewDocumentBuilder().AppendInt32("ping", 1).AppendString("$db", "admin").Build()
	if err := wire.Write(nc, 1, 0, &wire.Msg{Body: cmd}, wire.CompressorNoop); err != nil {
		return err
	}
	_, msg, _, err := wire.Read(bufio.NewReader(nc))
	if err != nil {
		return err
	}
	reply, ok := msg.(*wire.Msg)
	if !ok {
		return errors.New("unexpected reply type")
	}
	if okv, _ := reply.Body.Lookup("ok").AsFloat64OK(); okv != 1 {
		return fmt.Errorf("server answered %s", reply.Body)
	}
	return nil
}
