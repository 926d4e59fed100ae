package server

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// TLS on the TCP listeners (docs/design/auth.md, "TLS"), as mongod's
// --tlsMode: disabled, allowTLS and preferTLS (each connection may speak
// TLS or not: the server looks at its first byte) and requireTLS. The
// Unix socket stays plain, for local administration.

// The TLS modes.
const (
	TLSDisabled = "disabled"
	TLSAllow    = "allowTLS"
	TLSPrefer   = "preferTLS"
	TLSRequire  = "requireTLS"
)

// TLSConfig is the server's TLS settings (mongod's --tls* options).
type TLSConfig struct {
	Mode string // "": disabled
	// CertificateKeyFile is a PEM file with the server's certificate and
	// its private key.
	CertificateKeyFile string
	// CAFile, when set, makes the server ask clients for certificates
	// signed by one of its CAs; without AllowConnectionsWithoutCertificates
	// a client must present one.
	CAFile                              string
	AllowConnectionsWithoutCertificates bool
}

// tlsHandshakeTimeout bounds how long a new connection may take to show
// whether it speaks TLS and to finish the handshake.
const tlsHandshakeTimeout = 10 * time.Second

// tlsRecordHandshake is the first byte of a TLS connection.
const tlsRecordHandshake = 0x16

// build checks the settings and makes the crypto/tls configuration (nil:
// TLS disabled).
func (t TLSConfig) build() (*tls.Config, error) {
	switch t.Mode {
	case "", TLSDisabled:
		if t.CertificateKeyFile != "" || t.CAFile != "" {
			return nil, errors.New("--tlsCertificateKeyFile and --tlsCAFile need --tlsMode allowTLS, preferTLS or requireTLS")
		}
		return nil, nil
	case TLSAllow, TLSPrefer, TLSRequire:
	default:
		return nil, fmt.Errorf("--tlsMode %q: want disabled, allowTLS, preferTLS or requireTLS", t.Mode)
	}
	if t.CertificateKeyFile == "" {
		return nil, fmt.Errorf("--tlsMode %s needs --tlsCertificateKeyFile", t.Mode)
	}
	cert, err := tls.LoadX509KeyPair(t.CertificateKeyFile, t.CertificateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tlsCertificateKeyFile %s: %w", t.CertificateKeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--tlsCAFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tlsCAFile %s: no PEM certificate in it", t.CAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		if t.AllowConnectionsWithoutCertificates {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	return cfg, nil
}

// secure turns an accepted TCP connection into what the TLS mode makes of
// it: a TLS connection (handshake done), the plain connection, or an
// error for a plain connection that requireTLS refuses.
func (s *Server) secure(nc net.Conn) (net.Conn, error) {
	if s.tlsConfig == nil {
		return nc, nil
	}
	nc.SetReadDeadline(time.Now().Add(tlsHandshakeTimeout))
	br := bufio.NewReaderSize(nc, 16)
	first, err := br.Peek(1)
	if err != nil {
		return nil, fmt.Errorf("reading the first byte: %w", err)
	}
	pc := &peekedConn{Conn: nc, r: br}
	if first[0] != tlsRecordHandshake {
		if s.cfg.TLS.Mode == TLSRequire {
			return nil, errors.New("a plain connection, and TLS is required (--tlsMode requireTLS)")
		}
		nc.SetReadDeadline(time.Time{})
		return pc, nil
	}
	tc := tls.Server(pc, s.tlsConfig)
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	nc.SetReadDeadline(time.Time{})
	return tc, nil
}

// peekedConn is a connection whose first bytes were read ahead into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if c.r.Buffered() > 0 {
		return c.r.Read(p)
	}
	return c.Conn.Read(p)
}

// SyscallConn is the socket's, so that the disconnect watcher can peek at
// it (operations.go).
func (c *peekedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a socket")
	}
	return sc.SyscallConn()
}

// socketOf is the socket under a connection, TLS or peeked ones included.
func socketOf(nc net.Conn) (syscall.Conn, bool) {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	return sc, ok
}
