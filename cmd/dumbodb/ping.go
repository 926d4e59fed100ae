package main

import (
	"bufio"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/dumbodb/dumbodb/wire"

	"go.yaml.in/yaml/v3"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// pingDefaultPort is the port the server takes when no flag names one:
// the config file's (DUMBODB_CONFIG: net.port, or dumbodb.port), else
// DUMBODB_PORT, else 27017, as the server reads them (config.go), so that
// a container's healthcheck follows the server's port.
func pingDefaultPort() int {
	if path := os.Getenv(envPrefix + "CONFIG"); path != "" {
		if p := configPort(path); p > 0 {
			return p
		}
	}
	if p, err := strconv.Atoi(os.Getenv(envPrefix + "PORT")); err == nil {
		return p
	}
	return 27017
}

// configPort is the port a config file sets (0: none, or no file to read:
// the server, which reads the same file, reports what is wrong with it).
func configPort(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	var file struct {
		Net     struct{ Port int }
		Dumbodb struct{ Port int }
	}
	if yaml.Unmarshal(data, &file) != nil {
		return 0
	}
	return cmp.Or(file.Net.Port, file.Dumbodb.Port)
}

// runPing is `dumbodb ping [--host H] [--port N] [--tls [--tlsCAFile F]
// [--tlsCertificateKeyFile F]]`: it sends {ping: 1} over the wire protocol
// and exits 0 when the server answers ok: 1. The Docker healthcheck uses
// it. With --tls and no CA file it does not verify the server's
// certificate: it checks that the server answers, not who it is.
func runPing(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dumbodb ping", flag.ContinueOnError)
	fs.SetOutput(stderr)
	host := fs.String("host", "127.0.0.1", "server address")
	port := fs.Int("port", pingDefaultPort(), "server port (default: the port of the DUMBODB_CONFIG file, else DUMBODB_PORT, else 27017)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait")
	useTLS := fs.Bool("tls", false, "connect with TLS")
	caFile := fs.String("tlsCAFile", "", "with --tls, verify the server against these CAs")
	certFile := fs.String("tlsCertificateKeyFile", "", "with --tls, present this client certificate (PEM with its key)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var cfg *tls.Config
	if *useTLS {
		var err error
		if cfg, err = pingTLS(*caFile, *certFile); err != nil {
			fmt.Fprintf(stderr, "dumbodb ping: %v\n", err)
			return 2
		}
	}
	if err := ping(net.JoinHostPort(*host, strconv.Itoa(*port)), *timeout, cfg); err != nil {
		fmt.Fprintf(stderr, "dumbodb ping: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

// pingTLS is ping's TLS configuration.
func pingTLS(caFile, certFile string) (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: caFile == ""}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", caFile)
		}
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, certFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func ping(addr string, timeout time.Duration, tlsCfg *tls.Config) error {
	dialer := &net.Dialer{Timeout: timeout}
	var nc net.Conn
	var err error
	if tlsCfg != nil {
		nc, err = tls.DialWithDialer(dialer, "tcp", addr, tlsCfg)
	} else {
		nc, err = dialer.Dial("tcp", addr)
	}
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
