package auth

import (
	"testing"
)

// FuzzSASL feeds arbitrary client messages to both steps of a SCRAM
// conversation: a malformed payload must fail, never panic, and never
// authenticate.
func FuzzSASL(f *testing.F) {
	s := &Store{users: map[string]*User{}}
	cred, err := NewCredential(MechSHA256, "u", "p")
	if err != nil {
		f.Fatal(err)
	}
	s.users["db.u"] = &User{DB: "db", Name: "u", Creds: map[string]Credential{MechSHA256: cred}}
	f.Add([]byte("n,,n=u,r=abc"), []byte("c=biws,r=abc,p=AAAA"))
	f.Add([]byte("y,,n=u,r="), []byte(""))
	f.Add([]byte("p=tls-unique,,n=u,r=x"), []byte("c=,r=,p="))
	f.Add([]byte("n,a=other,n=u=2C,r=\x00"), []byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		conv, err := s.StartConversation(MechSHA256, "db")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := conv.Step(first); err != nil {
			return
		}
		if _, done, err := conv.Step(final); err == nil && done && conv.User() != nil {
			t.Fatalf("a forged proof authenticated: %q %q", first, final)
		}
	})
}
