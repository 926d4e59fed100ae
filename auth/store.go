package auth

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/dumbodb/dumbodb/internal/durablefile"
	"github.com/dumbodb/dumbodb/internal/formatversion"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The users file (docs/format/auth.md).
const (
	fileName   = "users.auth"
	headerSize = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Credential is one mechanism's salted keys (never the password).
type Credential struct {
	Iterations           int
	Salt                 []byte
	StoredKey, ServerKey []byte
}

// User is one user of one authentication database.
type User struct {
	DB, Name   string
	ID         [16]byte
	Creds      map[string]Credential // by mechanism
	Roles      []RoleRef
	CustomData bsoncore.Document // nil: none
}

func (u *User) key() string { return u.DB + "." + u.Name }

func (u *User) clone() *User {
	c := *u
	c.Creds = make(map[string]Credential, len(u.Creds))
	for k, v := range u.Creds {
		c.Creds[k] = v
	}
	c.Roles = append([]RoleRef(nil), u.Roles...)
	return &c
}

// Store is the server's users, kept in memory and in the users file,
// which every change rewrites before it returns.
type Store struct {
	path  string
	mu    sync.RWMutex
	users map[string]*User // by "db.name"; entries are never changed in place
	roles map[string]*Role // user-defined, by "db.name"; likewise
	// branches are the protected branches, by "db@branch".
	branches map[string]Protection
	gen      atomic.Uint64 // counts changes, so connections re-resolve their privileges
	pwCache  passwordCache // passwords CheckPassword verified lately
	// hold, when set, is called before a change takes mu and returns the
	// function called after it: the server makes changes wait while the
	// data directory is frozen (fsync with lock).
	hold func() func()
}

// SetWriteHold sets what each change to the users file waits for first
// (before it takes the store's lock, so that readers never wait for it).
// Call it before the store is shared.
func (s *Store) SetWriteHold(hold func() func()) { s.hold = hold }

func (s *Store) holdWrites() func() {
	if s.hold == nil {
		return func() {}
	}
	return s.hold()
}

// Generation changes whenever a user or role does.
func (s *Store) Generation() uint64 { return s.gen.Load() }

// Open reads the users file of a data directory (none: no users).
func Open(dataDir string) (*Store, error) {
	s := &Store{path: filepath.Join(dataDir, fileName), users: map[string]*User{}, roles: map[string]*Role{},
		branches: map[string]Protection{}}
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := decodeFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.path, err)
	}
	s.users, s.roles, s.branches = f.users, f.roles, f.branches
	return s, nil
}

// FileSize is the bytes of the users file (0: none written yet).
func (s *Store) FileSize() int64 {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// HasUsers reports whether any user exists (the localhost exception ends
// with the first).
func (s *Store) HasUsers() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.users) > 0
}

// User returns a user; the caller must not change it.
func (s *Store) User(db, name string) (*User, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u, ok := s.users[db+"."+name]
	return u, ok
}

// Users lists the users of a database ("": all), sorted by db and name.
func (s *Store) Users(db string) []*User {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*User
	for _, u := range s.users {
		if db == "" || u.DB == db {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out
}

// Create adds a user, giving it a new userId.
func (s *Store) Create(u *User) error {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[u.key()]; ok {
		return fmt.Errorf("%w: User \"%s@%s\" already exists", ErrUserExists, u.Name, u.DB)
	}
	u = u.clone()
	rand.Read(u.ID[:])
	u.ID[6] = u.ID[6]&0x0f | 0x40 // a version 4 UUID, as mongod's
	u.ID[8] = u.ID[8]&0x3f | 0x80
	return s.commit(func(m map[string]*User) { m[u.key()] = u })
}

// Update changes a user through fn, on a copy that replaces it once saved.
func (s *Store) Update(db, name string, fn func(*User) error) error {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.users[db+"."+name]
	if !ok {
		return fmt.Errorf("%w: User %s@%s not found", ErrUserNotFound, name, db)
	}
	u := old.clone()
	if err := fn(u); err != nil {
		return err
	}
	return s.commit(func(m map[string]*User) { m[u.key()] = u })
}

// Drop removes a user.
func (s *Store) Drop(db, name string) error {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[db+"."+name]; !ok {
		return fmt.Errorf("%w: User '%s@%s' not found", ErrUserNotFound, name, db)
	}
	return s.commit(func(m map[string]*User) { delete(m, db+"."+name) })
}

// DropAll removes every user of a database and counts them.
func (s *Store) DropAll(db string) (int, error) {
	defer s.holdWrites()()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	err := s.commit(func(m map[string]*User) {
		for k, u := range m {
			if u.DB == db {
				delete(m, k)
				n++
			}
		}
	})
	return n, err
}

// commit applies change to a copy of the users, writes the file and only
// then makes the copy current, so a failed write changes nothing. Called
// with mu held.
func (s *Store) commit(change func(map[string]*User)) error {
	return s.commitWith(func(f *fileState) { change(f.users) })
}

// commitRoles is commit for a change of the roles.
func (s *Store) commitRoles(change func(map[string]*Role)) error {
	return s.commitWith(func(f *fileState) { change(f.roles) })
}

// commitAll is commit for a change of users and roles together.
func (s *Store) commitAll(change func(map[string]*User, map[string]*Role)) error {
	return s.commitWith(func(f *fileState) { change(f.users, f.roles) })
}

// fileState is everything the users file holds.
type fileState struct {
	users    map[string]*User
	roles    map[string]*Role
	branches map[string]Protection
}

// commitWith applies change to a copy of the file's state, writes the
// file, and only then makes the copy current, so that a failed write
// changes nothing. Called with mu held.
func (s *Store) commitWith(change func(*fileState)) error {
	f := &fileState{users: make(map[string]*User, len(s.users)+1), roles: make(map[string]*Role, len(s.roles)+1),
		branches: make(map[string]Protection, len(s.branches)+1)}
	for k, u := range s.users {
		f.users[k] = u
	}
	for k, r := range s.roles {
		f.roles[k] = r
	}
	for k, p := range s.branches {
		f.branches[k] = p
	}
	change(f)
	if err := durablefile.Replace(s.path, encodeFile(f), 0o600); err != nil {
		return fmt.Errorf("save users and roles: %w", err)
	}
	s.users, s.roles, s.branches = f.users, f.roles, f.branches
	s.gen.Add(1)
	return nil
}

func encodeFile(f *fileState) []byte {
	arr := bsoncore.NewArrayBuilder()
	for _, k := range sortedNames(f.users) {
		arr.AppendDocument(EncodeUser(f.users[k], true))
	}
	rarr := bsoncore.NewArrayBuilder()
	for _, k := range sortedNames(f.roles) {
		rarr.AppendDocument(EncodeRole(f.roles[k]))
	}
	barr := bsoncore.NewArrayBuilder()
	for _, k := range sortedNames(f.branches) {
		barr.AppendDocument(EncodeProtection(f.branches[k]))
	}
	body := bsoncore.NewDocumentBuilder().AppendArray("users", arr.Build()).
		AppendArray("roles", rarr.Build()).AppendArray("branches", barr.Build()).Build()
	out := make([]byte, headerSize, headerSize+len(body))
	h := formatversion.Users.Header()
	copy(out, h[:])
	binary.LittleEndian.PutUint32(out[12:], crc32.Checksum(body, castagnoli))
	return append(out, body...)
}

func decodeFile(data []byte) (*fileState, error) {
	if _, err := formatversion.Users.ReadHeader(data); err != nil {
		return nil, err
	}
	if len(data) < headerSize {
		return nil, errors.New("users file cut short")
	}
	body := data[headerSize:]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[12:]) {
		return nil, errors.New("users file checksum mismatch")
	}
	doc := bsoncore.Document(body)
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	users, err := decodeList(doc.Lookup("users"), decodeUser)
	if err != nil {
		return nil, err
	}
	roles, err := decodeList(doc.Lookup("roles"), decodeRole)
	if err != nil {
		return nil, err
	}
	f := &fileState{users: map[string]*User{}, roles: map[string]*Role{}, branches: map[string]Protection{}}
	for _, u := range users {
		f.users[u.key()] = u
	}
	for _, r := range roles {
		f.roles[r.key()] = r
	}
	if _, err := doc.LookupErr("branches"); err == nil {
		ps, err := decodeList(doc.Lookup("branches"), decodeProtection)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			f.branches[p.key()] = p
		}
	}
	return f, nil
}

// decodeList decodes an array of documents.
func decodeList[T any](v bsoncore.Value, decode func(bsoncore.Document) (T, error)) ([]T, error) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, errors.New("users file without its users or roles array")
	}
	vals, _ := arr.Values()
	out := make([]T, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil, errors.New("an entry that is not a document")
		}
		x, err := decode(d)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

func sortedNames[T any](m map[string]T) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// EncodeUser is a user as mongod keeps it in admin.system.users (and as
// usersInfo shows it, without credentials when withCredentials is false).
func EncodeUser(u *User, withCredentials bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("_id", u.key()).
		AppendBinary("userId", 4, u.ID[:]).AppendString("user", u.Name).AppendString("db", u.DB)
	if withCredentials {
		cb := bsoncore.NewDocumentBuilder()
		for _, mech := range []string{MechSHA1, MechSHA256} {
			if c, ok := u.Creds[mech]; ok {
				cb.AppendDocument(mech, bsoncore.NewDocumentBuilder().AppendInt32("iterationCount", int32(c.Iterations)).
					AppendString("salt", base64.StdEncoding.EncodeToString(c.Salt)).
					AppendString("storedKey", base64.StdEncoding.EncodeToString(c.StoredKey)).
					AppendString("serverKey", base64.StdEncoding.EncodeToString(c.ServerKey)).Build())
			}
		}
		b.AppendDocument("credentials", cb.Build())
	}
	b.AppendArray("roles", encodeRoles(u.Roles))
	if u.CustomData != nil {
		b.AppendDocument("customData", u.CustomData)
	}
	return b.Build()
}

func encodeRoles(roles []RoleRef) bsoncore.Array {
	arr := bsoncore.NewArrayBuilder()
	for _, r := range roles {
		arr.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("role", r.Role).AppendString("db", r.DB).Build())
	}
	return arr.Build()
}

// EncodeRoles is a role list as mongod writes it.
func EncodeRoles(roles []RoleRef) bsoncore.Array { return encodeRoles(roles) }

func decodeUser(d bsoncore.Document) (*User, error) {
	u := &User{Creds: map[string]Credential{}}
	u.Name, _ = d.Lookup("user").StringValueOK()
	u.DB, _ = d.Lookup("db").StringValueOK()
	if _, id, ok := d.Lookup("userId").BinaryOK(); ok && len(id) == 16 {
		copy(u.ID[:], id)
	}
	if u.Name == "" || u.DB == "" {
		return nil, errors.New("a user without user or db")
	}
	creds, _ := d.Lookup("credentials").DocumentOK()
	for _, mech := range []string{MechSHA1, MechSHA256} {
		c, ok := creds.Lookup(mech).DocumentOK()
		if !ok {
			continue
		}
		cred, err := decodeCredential(c)
		if err != nil {
			return nil, fmt.Errorf("user %s@%s: %w", u.Name, u.DB, err)
		}
		u.Creds[mech] = cred
	}
	u.Roles = decodeRoleRefs(d.Lookup("roles"))
	if cd, ok := d.Lookup("customData").DocumentOK(); ok {
		u.CustomData = append(bsoncore.Document(nil), cd...)
	}
	return u, nil
}

func decodeCredential(c bsoncore.Document) (Credential, error) {
	iters, _ := c.Lookup("iterationCount").Int32OK()
	cred := Credential{Iterations: int(iters)}
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"salt", &cred.Salt}, {"storedKey", &cred.StoredKey}, {"serverKey", &cred.ServerKey}} {
		s, _ := c.Lookup(f.name).StringValueOK()
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			return Credential{}, fmt.Errorf("credential field %s: not base64", f.name)
		}
		*f.dst = b
	}
	if cred.Iterations <= 0 {
		return Credential{}, errors.New("credential without an iteration count")
	}
	return cred, nil
}
