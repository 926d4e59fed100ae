package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dumbodb/dumbodb/auth"
	"github.com/dumbodb/dumbodb/mongoerr"
)

// authMechanismsParameter is mongod's startup parameter that names the
// mechanisms clients may authenticate with: a server that leaves
// SCRAM-SHA-1 out refuses logins by it, whatever credentials users hold.
const authMechanismsParameter = "authenticationMechanisms"

// DefaultAuthMechanisms are the mechanisms enabled unless --setParameter
// authenticationMechanisms names others: mongod's default, MONGODB-X509
// and every SCRAM mechanism this build offers (auth.Mechanisms).
func DefaultAuthMechanisms() []string { return append([]string{mechX509}, auth.Mechanisms...) }

// SetAuthMechanisms takes --setParameter authenticationMechanisms, a
// comma-separated list, before the server serves. A name this build does
// not offer stops the start, as on mongod.
func (s *Server) SetAuthMechanisms(list string) error {
	offered := DefaultAuthMechanisms()
	var mechs []string
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		if !slices.Contains(offered, m) {
			return fmt.Errorf("--setParameter %s: SASL Mechanism '%s' is not supported (DumboDB offers %s)", authMechanismsParameter, m, strings.Join(offered, ", "))
		}
		if !slices.Contains(mechs, m) {
			mechs = append(mechs, m)
		}
	}
	s.cfg.AuthMechanisms = mechs
	return nil
}

// authMechanisms are the mechanisms enabled.
func (s *Server) authMechanisms() []string {
	if s.cfg.AuthMechanisms == nil {
		return DefaultAuthMechanisms()
	}
	return s.cfg.AuthMechanisms
}

// mechanismEnabled refuses a mechanism that is unknown or not enabled, in
// mongod's words.
func (s *Server) mechanismEnabled(mech string) error {
	if !slices.Contains(s.authMechanisms(), mech) {
		return mongoerr.New(mongoerr.MechanismUnavailable, "Received authentication for mechanism %s which is not enabled", mech)
	}
	return nil
}
