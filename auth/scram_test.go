package auth

import (
	"bytes"
	"crypto/fips140"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
)

// driverClient is a SCRAM client as the MongoDB drivers make one:
// SCRAM-SHA-1 works on the hex MD5 of "user:mongo:password", not
// SASLprep'd; SCRAM-SHA-256 on the SASLprep'd password.
func driverClient(t *testing.T, mech, user, password string) *scram.Client {
	t.Helper()
	var c *scram.Client
	var err error
	switch mech {
	case MechSHA1:
		sum := md5.Sum([]byte(user + ":mongo:" + password))
		c, err = scram.SHA1.NewClientUnprepped(user, hex.EncodeToString(sum[:]), "")
	case MechSHA256:
		c, err = scram.SHA256.NewClient(user, password, "")
	default:
		t.Fatalf("no client for %s", mech)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// authenticate runs a whole conversation between a driver's client and
// the users of db in s. It returns the server's conversation and the
// error its Step reported; on success the client must accept the
// server's final message, which proves the server holds the user's keys.
func authenticate(t *testing.T, s *Store, mech, db, user, password string) (*Conversation, error) {
	t.Helper()
	conv, err := s.StartConversation(mech, db)
	if err != nil {
		t.Fatalf("StartConversation(%s, %s): %v", mech, db, err)
	}
	client := driverClient(t, mech, user, password).NewConversation()
	fromServer := ""
	for range 3 {
		toServer, err := client.Step(fromServer)
		if err != nil {
			t.Fatalf("client step: %v", err)
		}
		reply, done, err := conv.Step([]byte(toServer))
		if err != nil {
			return conv, err
		}
		if done {
			if _, err := client.Step(string(reply)); err != nil || !client.Valid() {
				t.Fatalf("client refused the server's final message %q: %v", reply, err)
			}
			return conv, nil
		}
		fromServer = string(reply)
	}
	t.Fatal("conversation not done after three client messages")
	return nil, nil
}

// storeWithUser is a store holding user@admin with credentials for
// password under every mechanism.
func storeWithUser(t *testing.T, user, password string) *Store {
	t.Helper()
	s := openStore(t, t.TempDir())
	u := &User{DB: "admin", Name: user, Creds: map[string]Credential{}}
	for _, mech := range Mechanisms {
		cred, err := NewCredential(mech, user, password)
		if err != nil {
			t.Fatal(err)
		}
		u.Creds[mech] = cred
	}
	mustCreate(t, s, u)
	return s
}

func TestSCRAMRightPasswordAuthenticates(t *testing.T) {
	s := storeWithUser(t, "alice", "correct horse")
	for _, mech := range []string{MechSHA1, MechSHA256} {
		t.Run(mech, func(t *testing.T) {
			conv, err := authenticate(t, s, mech, "admin", "alice", "correct horse")
			if err != nil {
				t.Fatalf("authentication failed: %v", err)
			}
			u := conv.User()
			if u == nil || u.Name != "alice" || u.DB != "admin" {
				t.Fatalf("User() = %+v, want alice@admin", u)
			}
			if conv.UserName() != "alice" || conv.Mechanism() != mech || conv.DB() != "admin" {
				t.Errorf("conversation of %q, %q, %q", conv.UserName(), conv.Mechanism(), conv.DB())
			}
		})
	}
}

// The client escapes ',' and '=' in a user name; the server finds the
// user by the name unescaped.
func TestSCRAMUserNameWithCommaAndEquals(t *testing.T) {
	s := storeWithUser(t, "a,b=c", "pw")
	for _, mech := range []string{MechSHA1, MechSHA256} {
		if _, err := authenticate(t, s, mech, "admin", "a,b=c", "pw"); err != nil {
			t.Errorf("%s: %v", mech, err)
		}
	}
}

func TestSCRAMWrongPasswordFails(t *testing.T) {
	s := storeWithUser(t, "alice", "correct horse")
	for _, mech := range []string{MechSHA1, MechSHA256} {
		t.Run(mech, func(t *testing.T) {
			conv, err := authenticate(t, s, mech, "admin", "alice", "battery staple")
			if !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("error %v, want ErrAuthFailed", err)
			}
			if conv.User() != nil {
				t.Error("a failed conversation has a user")
			}
		})
	}
}

func TestSCRAMUnknownUserFails(t *testing.T) {
	s := storeWithUser(t, "alice", "pw")
	for _, mech := range []string{MechSHA1, MechSHA256} {
		t.Run(mech, func(t *testing.T) {
			conv, err := authenticate(t, s, mech, "admin", "mallory", "pw")
			if !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("error %v, want ErrAuthFailed", err)
			}
			if conv.User() != nil {
				t.Error("an unknown user authenticated")
			}
			if conv.UserName() != "mallory" {
				t.Errorf("UserName() = %q, want the name the client gave", conv.UserName())
			}
		})
	}
}

// A user is a user of one database: the same name elsewhere is unknown.
func TestSCRAMUserOfAnotherDatabaseFails(t *testing.T) {
	s := storeWithUser(t, "alice", "pw")
	if _, err := authenticate(t, s, MechSHA256, "shop", "alice", "pw"); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("error %v, want ErrAuthFailed", err)
	}
}

func TestSCRAMWithoutCredentialsForTheMechanismFails(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreate(t, s, newTestUser(t, "admin", "alice", "pw")) // SCRAM-SHA-256 only
	// Not ErrAuthFailed: mongod tells the client the user has no keys for
	// the mechanism (MechanismUnavailable), which ErrMechanism becomes.
	if _, err := authenticate(t, s, MechSHA1, "admin", "alice", "pw"); !errors.Is(err, ErrMechanism) {
		t.Errorf("SCRAM-SHA-1 without its credentials: %v, want ErrMechanism", err)
	}
}

func TestSCRAMStepAfterCompletionFails(t *testing.T) {
	s := storeWithUser(t, "alice", "pw")
	conv, err := authenticate(t, s, MechSHA256, "admin", "alice", "pw")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := conv.Step([]byte("c=biws,r=x,p=AAAA")); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("a step after completion: %v, want ErrAuthFailed", err)
	}
}

func TestStartConversationRefusesOtherMechanisms(t *testing.T) {
	s := openStore(t, t.TempDir())
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-512", "scram-sha-256", ""} {
		if _, err := s.StartConversation(mech, "admin"); !errors.Is(err, ErrMechanism) {
			t.Errorf("StartConversation(%q) = %v, want ErrMechanism", mech, err)
		}
	}
}

// failsCleanly checks that a client message is refused with
// ErrAuthFailed and leaves the conversation without a user.
func failsCleanly(t *testing.T, conv *Conversation, msg string) {
	t.Helper()
	reply, done, err := conv.Step([]byte(msg))
	if !errors.Is(err, ErrAuthFailed) {
		t.Errorf("%q: reply %q, done %v, error %v; want ErrAuthFailed", msg, reply, done, err)
	}
	if conv.User() != nil {
		t.Errorf("%q authenticated", msg)
	}
}

func TestSCRAMMalformedFirstMessagesFail(t *testing.T) {
	s := storeWithUser(t, "alice", "pw")
	for _, msg := range []string{
		"",
		"garbage",
		"n,,",
		"n,,n=alice",                  // no nonce
		"n,,r=abc",                    // no user
		"x,,n=alice,r=abc",            // no such channel binding flag
		"p=tls-unique,,n=alice,r=abc", // channel binding the server does not offer
		"n,,n=al=ZZice,r=abc",         // a bad escape in the user name
		"n,,m=ext,n=alice,r=abc",      // a mandatory extension
		"\xff\xfe\x00",
	} {
		for _, mech := range []string{MechSHA1, MechSHA256} {
			conv, err := s.StartConversation(mech, "admin")
			if err != nil {
				t.Fatal(err)
			}
			failsCleanly(t, conv, msg)
		}
	}
}

func TestSCRAMMalformedFinalMessagesFail(t *testing.T) {
	s := storeWithUser(t, "alice", "pw")
	const clientNonce = "fyko+d2lbbFgONRv9qkxdawL"
	proof := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, bad := range []func(nonce string) string{
		func(string) string { return "" },
		func(string) string { return "garbage" },
		func(string) string { return "c=biws" },
		func(n string) string { return "c=biws,r=" + n },                         // no proof
		func(n string) string { return "c=biws,r=" + n + ",p=!!not base64!!" },   // proof not base64
		func(n string) string { return "c=biws,r=" + n + ",p=AAAA" },             // proof too short
		func(string) string { return "c=biws,r=" + clientNonce + ",p=" + proof }, // the client's nonce alone
		func(n string) string { return "c=eSws,r=" + n + ",p=" + proof },         // another channel binding
		func(n string) string { return "c=biws,r=" + n + ",p=" + proof },         // a forged proof
		func(n string) string { return "r=" + n + ",c=biws,p=" + proof },         // attributes out of order
	} {
		conv, err := s.StartConversation(MechSHA256, "admin")
		if err != nil {
			t.Fatal(err)
		}
		first, _, err := conv.Step([]byte("n,,n=alice,r=" + clientNonce))
		if err != nil {
			t.Fatalf("a well-formed first message: %v", err)
		}
		nonce, _, _ := strings.Cut(strings.TrimPrefix(string(first), "r="), ",")
		failsCleanly(t, conv, bad(nonce))
	}
}

func TestNewCredentialRefusesOtherMechanisms(t *testing.T) {
	if _, err := NewCredential("PLAIN", "alice", "pw"); !errors.Is(err, ErrMechanism) {
		t.Errorf("NewCredential(PLAIN) = %v, want ErrMechanism", err)
	}
}

// SCRAM-SHA-256 SASLprep's the password, which refuses control characters.
func TestNewCredentialRefusesAPasswordSASLprepForbids(t *testing.T) {
	if _, err := NewCredential(MechSHA256, "alice", "pass\x07word"); err == nil {
		t.Error("a password with a control character was accepted")
	}
}

func TestNewCredentialSaltsEveryCredentialAfresh(t *testing.T) {
	for _, mech := range []string{MechSHA1, MechSHA256} {
		a, err := NewCredential(mech, "alice", "pw")
		if err != nil {
			t.Fatal(err)
		}
		b, err := NewCredential(mech, "alice", "pw")
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a.Salt, b.Salt) || bytes.Equal(a.StoredKey, b.StoredKey) {
			t.Errorf("%s: two credentials share a salt or keys", mech)
		}
	}
}

// fipsOnlyChild marks the test process that TestFIPSOnlyModeRefusesSCRAMSHA1Cleanly
// starts with GODEBUG=fips140=only, a setting read once at start.
const fipsOnlyChild = "DUMBODB_AUTH_FIPS_ONLY_CHILD"

// FIPS 140-only mode forbids MD5 and SHA-1, both of which SCRAM-SHA-1
// needs: the mechanism is unavailable there, an error rather than a
// panic, and SCRAM-SHA-256 still works.
func TestFIPSOnlyModeRefusesSCRAMSHA1Cleanly(t *testing.T) {
	if os.Getenv(fipsOnlyChild) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
		cmd.Env = append(os.Environ(), "GODEBUG=fips140=only", fipsOnlyChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
			t.Fatalf("under GODEBUG=fips140=only: %v\n%s", err, out)
		}
		return
	}
	if !fips140.Enforced() {
		t.Fatal("GODEBUG=fips140=only is not in effect")
	}
	if _, err := NewCredential(MechSHA1, "alice", "pw"); !errors.Is(err, ErrMechanism) {
		t.Errorf("NewCredential(SCRAM-SHA-1) = %v, want ErrMechanism", err)
	}
	if slices.Contains(Mechanisms, MechSHA1) {
		t.Errorf("Mechanisms %v offers SCRAM-SHA-1", Mechanisms)
	}
	s := storeWithUser(t, "alice", "pw")
	if _, err := s.StartConversation(MechSHA1, "admin"); !errors.Is(err, ErrMechanism) {
		t.Errorf("StartConversation(SCRAM-SHA-1) = %v, want ErrMechanism", err)
	}
	if _, err := authenticate(t, s, MechSHA256, "admin", "alice", "pw"); err != nil {
		t.Errorf("SCRAM-SHA-256: %v", err)
	}
}
