package auth

import (
	"crypto/fips140"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/xdg-go/scram"
	"github.com/xdg-go/stringprep"
)

// The SCRAM mechanisms, and mongod's default iteration counts for them
// (scramIterationCount, scramSHA256IterationCount).
const (
	MechSHA1   = "SCRAM-SHA-1"
	MechSHA256 = "SCRAM-SHA-256"

	IterationsSHA1   = 10000
	IterationsSHA256 = 15000
)

// Mechanisms lists the mechanisms, as hello's saslSupportedMechs does.
var Mechanisms = availableMechanisms()

// availableMechanisms is both mechanisms, or SCRAM-SHA-256 alone in FIPS
// 140-only mode (GODEBUG=fips140=only, fixed at start), which forbids
// the MD5 and SHA-1 that SCRAM-SHA-1 needs: they panic there.
func availableMechanisms() []string {
	if fips140.Enforced() {
		return []string{MechSHA256}
	}
	return []string{MechSHA1, MechSHA256}
}

func hashOf(mech string) (scram.HashGeneratorFcn, bool) {
	switch mech {
	case MechSHA1:
		if fips140.Enforced() {
			return nil, false
		}
		return scram.SHA1, true
	case MechSHA256:
		return scram.SHA256, true
	}
	return nil, false
}

// mongoDigest is the password SCRAM-SHA-1 works on in MongoDB: the hex MD5
// of "user:mongo:password" (the drivers compute it the same way).
func mongoDigest(user, password string) string {
	sum := md5.Sum([]byte(user + ":mongo:" + password))
	return hex.EncodeToString(sum[:])
}

// PasswordPrepError names, as ICU's u_errorName does, why SASLprep
// (RFC 4013) refuses a SCRAM-SHA-256 password, or is "" when it takes
// it. mongod prepares such a password with ICU before it derives any key
// and answers with ICU's name for the failure, so a client sees the same
// words here: a code point unassigned in Unicode 3.2 (an emoji) is
// U_STRINGPREP_UNASSIGNED_ERROR; a control character such as NUL, or
// another prohibited code point, is U_STRINGPREP_PROHIBITED_ERROR; text
// mixing right-to-left and left-to-right is U_STRINGPREP_CHECK_BIDI_ERROR.
func PasswordPrepError(password string) string {
	// ICU refuses a code point unassigned in Unicode 3.2 as it maps the
	// input, before it looks for prohibited ones, so that error comes
	// first wherever the code point is.
	for _, r := range password {
		if stringprep.TableA1.Contains(r) {
			return "U_STRINGPREP_UNASSIGNED_ERROR"
		}
	}
	if _, err := scram.SHA256.NewClient("", password, ""); err != nil {
		if strings.Contains(err.Error(), "BiDi") {
			return "U_STRINGPREP_CHECK_BIDI_ERROR"
		}
		return "U_STRINGPREP_PROHIBITED_ERROR"
	}
	return ""
}

// NewCredential derives a mechanism's salted keys from a password, with
// a fresh salt and mongod's iteration count.
func NewCredential(mech, user, password string) (Credential, error) {
	hash, ok := hashOf(mech)
	if !ok {
		return Credential{}, fmt.Errorf("%w: %s", ErrMechanism, mech)
	}
	iters, saltLen := IterationsSHA256, 28
	secret := password
	if mech == MechSHA1 {
		iters, saltLen, secret = IterationsSHA1, 16, mongoDigest(user, password)
	}
	client, err := hash.NewClient(user, secret, "") // SASLprep's the password
	if err != nil {
		return Credential{}, fmt.Errorf("%s password: %w", mech, err)
	}
	salt := make([]byte, saltLen)
	rand.Read(salt)
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return Credential{}, fmt.Errorf("%s keys: %w", mech, err)
	}
	return Credential{Iterations: iters, Salt: salt, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// Conversation is the server side of one SCRAM authentication against a
// database's users.
type Conversation struct {
	mech, db string
	store    *Store
	conv     *scram.ServerConversation
	user     *User
	name     string // the user the client named
}

// StartConversation begins a SCRAM conversation for the users of db.
func (s *Store) StartConversation(mech, db string) (*Conversation, error) {
	hash, ok := hashOf(mech)
	if !ok {
		return nil, fmt.Errorf("%w: Received authentication for mechanism %s which is not enabled", ErrMechanism, mech)
	}
	c := &Conversation{mech: mech, db: db, store: s}
	srv, err := hash.NewServer(c.lookup)
	if err != nil {
		return nil, err
	}
	c.conv = srv.NewConversation()
	return c, nil
}

// lookup finds the stored keys of the user a client names.
func (c *Conversation) lookup(name string) (scram.StoredCredentials, error) {
	c.name = name
	u, ok := c.store.User(c.db, name)
	if !ok {
		return scram.StoredCredentials{}, fmt.Errorf("%w: unknown user %s@%s", ErrAuthFailed, name, c.db)
	}
	cred, ok := u.Creds[c.mech]
	if !ok {
		return scram.StoredCredentials{}, fmt.Errorf("%w: user %s@%s has no %s credentials", ErrMechanism, name, c.db, c.mech)
	}
	c.user = u
	return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
		StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}, nil
}

// Step answers one client message; done reports that the client has
// proved its password (the last server message is the reply).
func (c *Conversation) Step(payload []byte) (reply []byte, done bool, err error) {
	out, err := c.conv.Step(string(payload))
	if errors.Is(err, ErrMechanism) {
		return nil, false, err // a user without keys for the mechanism is told so
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrAuthFailed, err)
	}
	if c.conv.Done() && !c.conv.Valid() {
		return nil, false, ErrAuthFailed
	}
	return []byte(out), c.conv.Done(), nil
}

// User is the authenticated user, once Step reported done.
func (c *Conversation) User() *User {
	if !c.conv.Done() || !c.conv.Valid() {
		return nil
	}
	return c.user
}

// UserName is the user the client named ("": not yet), whether or not
// it exists.
func (c *Conversation) UserName() string { return c.name }

// Mechanism is the conversation's mechanism.
func (c *Conversation) Mechanism() string { return c.mech }

// DB is the authentication database.
func (c *Conversation) DB() string { return c.db }

// CheckPassword authenticates user of db by a plaintext password (the
// HTTP listener's basic credentials) against the user's SCRAM-SHA-256
// keys, else its SCRAM-SHA-1 ones: the password is salted and hashed as
// a SCRAM login's client would, and its stored key compared. A user it
// has verified recently is verified again from a digest of the password
// (passwordCache), so a client's run of requests derives the keys once.
func (s *Store) CheckPassword(db, name, password string) (*User, error) {
	u, ok := s.User(db, name)
	if !ok {
		return nil, ErrAuthFailed
	}
	if s.pwCache.hit(u, password) {
		return u, nil
	}
	for _, mech := range []string{MechSHA256, MechSHA1} {
		cred, ok := u.Creds[mech]
		hashFn, known := hashOf(mech)
		if !ok || !known {
			continue
		}
		secret := password
		if mech == MechSHA1 {
			secret = mongoDigest(name, password)
		}
		client, err := hashFn.NewClient(name, secret, "")
		if err != nil {
			return nil, ErrAuthFailed
		}
		sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations})
		if err == nil && subtle.ConstantTimeCompare(sc.StoredKey, cred.StoredKey) == 1 {
			s.pwCache.add(u, password)
			return u, nil
		}
		return nil, ErrAuthFailed
	}
	return nil, ErrAuthFailed
}

// passwordCache remembers, for a minute, which users' passwords checked,
// by a keyed digest of the user's stored key and the password; a changed
// password or stored key misses.
type passwordCache struct {
	mu      sync.Mutex
	key     [32]byte
	entries map[[32]byte]time.Time
}

const passwordCacheTTL = time.Minute

func (c *passwordCache) digest(u *User, password string) [32]byte {
	if c.key == ([32]byte{}) {
		rand.Read(c.key[:])
	}
	m := hmac.New(sha256.New, c.key[:])
	fmt.Fprintf(m, "%s\x00%s\x00", u.DB, u.Name)
	for _, mech := range []string{MechSHA256, MechSHA1} {
		m.Write(u.Creds[mech].StoredKey)
	}
	m.Write([]byte(password))
	var out [32]byte
	copy(out[:], m.Sum(nil))
	return out
}

func (c *passwordCache) hit(u *User, password string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.entries[c.digest(u, password)]
	return ok && time.Since(at) < passwordCacheTTL
}

func (c *passwordCache) add(u *User, password string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) > 1024 {
		c.entries = map[[32]byte]time.Time{}
	}
	c.entries[c.digest(u, password)] = time.Now()
}
