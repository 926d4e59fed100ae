package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/dumbodb/dumbodb/bench"
)

// echoCommand is the hidden subcommand that runs Floor/RawEcho's
// do-nothing server: it listens on a free loopback port, prints the
// address, and serves until it is killed.
const echoCommand = "echo-server"

func runEchoServer(stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "dumbobench %s: %v\n", echoCommand, err)
		return 1
	}
	fmt.Fprintln(stdout, ln.Addr())
	if err := bench.ServeEcho(ln); err != nil {
		fmt.Fprintf(stderr, "dumbobench %s: %v\n", echoCommand, err)
		return 1
	}
	return 0
}

// startEcho runs this binary's echo server as a process of its own, so
// that its CPU is read apart from the client's.
func startEcho(ctx context.Context) (string, int, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return "", 0, nil, fmt.Errorf("echo server: %w", err)
	}
	cmd := exec.CommandContext(ctx, self, echoCommand)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, fmt.Errorf("echo server: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", 0, nil, fmt.Errorf("echo server: %w", err)
	}
	stop := func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		stop()
		return "", 0, nil, fmt.Errorf("echo server: no address: %w", err)
	}
	return strings.TrimSpace(addr), cmd.Process.Pid, stop, nil
}
