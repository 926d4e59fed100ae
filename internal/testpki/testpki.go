// Package testpki makes a certificate authority and certificates it signs,
// written as PEM files, for the TLS tests of the server and the binary.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a CA and the directory its files are written to.
type PKI struct {
	Dir    string
	CA     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	CAFile string // the CA's certificate, PEM
}

// New makes a CA valid for an hour around now, in dir.
func New(dir string) (*PKI, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "DumboDB test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	p := &PKI{Dir: dir, CA: ca, caKey: key, CAFile: filepath.Join(dir, "ca.pem")}
	return p, os.WriteFile(p.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
}

// Issue makes a certificate named cn for 127.0.0.1 and localhost, for a
// server or a client, and writes it with its key to one PEM file (the form
// --tlsCertificateKeyFile and mongosh's --tlsCertificateKeyFile take).
func (p *PKI) Issue(cn string, usage x509.ExtKeyUsage) (string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:   pkix.Name{CommonName: cn, Organization: []string{"DumboDB"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.CA, &key.PublicKey, p.caKey)
	if err != nil {
		return "", err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	file := filepath.Join(p.Dir, cn+".pem")
	out := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})...)
	return file, os.WriteFile(file, out, 0o600)
}

// ClientConfig trusts the CA, presenting the certificate in certFile when
// it is set.
func (p *PKI) ClientConfig(certFile string) (*tls.Config, error) {
	pool := x509.NewCertPool()
	pool.AddCert(p.CA)
	cfg := &tls.Config{RootCAs: pool}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, certFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
