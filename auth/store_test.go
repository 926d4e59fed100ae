package auth

import (
	"encoding/binary"
	"errors"
	"github.com/dumbodb/dumbodb/internal/formatversion"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// openStore opens the users file of dir, failing the test on an error.
func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

// newTestUser is a user with SCRAM-SHA-256 credentials for password.
func newTestUser(t *testing.T, db, name, password string, roles ...RoleRef) *User {
	t.Helper()
	cred, err := NewCredential(MechSHA256, name, password)
	if err != nil {
		t.Fatal(err)
	}
	return &User{DB: db, Name: name, Creds: map[string]Credential{MechSHA256: cred}, Roles: roles}
}

func mustCreate(t *testing.T, s *Store, u *User) {
	t.Helper()
	if err := s.Create(u); err != nil {
		t.Fatalf("Create %s@%s: %v", u.Name, u.DB, err)
	}
}

// storedUser is a user of s, failing the test when it is missing.
func storedUser(t *testing.T, s *Store, db, name string) *User {
	t.Helper()
	u, ok := s.User(db, name)
	if !ok {
		t.Fatalf("user %s@%s not found", name, db)
	}
	return u
}

// storedRole is a user-defined role of s, failing the test when it is
// missing.
func storedRole(t *testing.T, s *Store, ref RoleRef) *Role {
	t.Helper()
	r, ok := s.Role(ref)
	if !ok {
		t.Fatalf("role %v not found", ref)
	}
	return r
}

func mustCreateRole(t *testing.T, s *Store, r *Role) {
	t.Helper()
	if err := s.CreateRole(r); err != nil {
		t.Fatalf("CreateRole %s@%s: %v", r.Name, r.DB, err)
	}
}

func TestOpenWithoutUsersFileHasNoUsers(t *testing.T) {
	s := openStore(t, t.TempDir())
	if s.HasUsers() || len(s.Users("")) != 0 {
		t.Error("a new data directory has users")
	}
	if _, ok := s.User("admin", "alice"); ok {
		t.Error("User found in an empty store")
	}
}

func TestCreatedUserSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	u := newTestUser(t, "admin", "alice", "secret", RoleRef{Role: "readWrite", DB: "shop"})
	u.CustomData = bsoncore.NewDocumentBuilder().AppendString("team", "billing").Build()
	mustCreate(t, s, u)
	created := storedUser(t, s, "admin", "alice")
	if created.ID == ([16]byte{}) {
		t.Error("created user has no userId")
	}

	got, ok := openStore(t, dir).User("admin", "alice")
	if !ok {
		t.Fatal("user lost on reopening")
	}
	if !reflect.DeepEqual(got, created) {
		t.Errorf("reopened user\n %+v\nwant\n %+v", got, created)
	}
}

func TestUsersAreListedByDatabase(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreate(t, s, newTestUser(t, "shop", "bob", "pw"))
	mustCreate(t, s, newTestUser(t, "admin", "alice", "pw"))
	mustCreate(t, s, newTestUser(t, "shop", "ann", "pw"))
	if n := len(s.Users("")); n != 3 {
		t.Errorf("Users(\"\") lists %d users, want 3", n)
	}
	shop := s.Users("shop")
	if len(shop) != 2 || shop[0].Name != "ann" || shop[1].Name != "bob" {
		t.Errorf("Users(shop) = %v, want ann and bob", shop)
	}
}

func TestCreateRefusesAnExistingUser(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustCreate(t, s, newTestUser(t, "admin", "alice", "first"))
	first := storedUser(t, s, "admin", "alice")
	if err := s.Create(newTestUser(t, "admin", "alice", "second")); !errors.Is(err, ErrUserExists) {
		t.Fatalf("second Create = %v, want ErrUserExists", err)
	}
	if got, _ := openStore(t, dir).User("admin", "alice"); !reflect.DeepEqual(got, first) {
		t.Error("a refused Create changed the stored user")
	}
	// The same name on another database is another user.
	mustCreate(t, s, newTestUser(t, "shop", "alice", "pw"))
}

func TestUpdatedUserSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustCreate(t, s, newTestUser(t, "admin", "alice", "pw"))
	gen := s.Generation()
	grant := RoleRef{Role: "read", DB: "shop"}
	if err := s.Update("admin", "alice", func(u *User) error {
		u.Roles = append(u.Roles, grant)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if s.Generation() == gen {
		t.Error("Update did not change the generation")
	}
	got := storedUser(t, openStore(t, dir), "admin", "alice")
	if !reflect.DeepEqual(got.Roles, []RoleRef{grant}) {
		t.Errorf("reopened roles %v, want %v", got.Roles, []RoleRef{grant})
	}
}

func TestFailedUpdateChangesNothing(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreate(t, s, newTestUser(t, "admin", "alice", "pw"))
	refused := errors.New("refused")
	err := s.Update("admin", "alice", func(u *User) error {
		u.Roles = append(u.Roles, RoleRef{Role: "root", DB: "admin"})
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	if u := storedUser(t, s, "admin", "alice"); len(u.Roles) != 0 {
		t.Errorf("a failed update left roles %v", u.Roles)
	}
}

func TestUpdateOfAMissingUserIsNotFound(t *testing.T) {
	s := openStore(t, t.TempDir())
	err := s.Update("admin", "ghost", func(*User) error { return nil })
	if !errors.Is(err, ErrUserNotFound) {
		t.Errorf("Update = %v, want ErrUserNotFound", err)
	}
}

func TestDroppedUserStaysDroppedAfterReopening(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustCreate(t, s, newTestUser(t, "admin", "alice", "pw"))
	mustCreate(t, s, newTestUser(t, "admin", "bob", "pw"))
	if err := s.Drop("admin", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop("admin", "alice"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("second Drop = %v, want ErrUserNotFound", err)
	}
	r := openStore(t, dir)
	if _, ok := r.User("admin", "alice"); ok {
		t.Error("dropped user back after reopening")
	}
	if _, ok := r.User("admin", "bob"); !ok {
		t.Error("Drop of alice lost bob")
	}
}

func TestDropAllDropsOneDatabasesUsers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	mustCreate(t, s, newTestUser(t, "shop", "a", "pw"))
	mustCreate(t, s, newTestUser(t, "shop", "b", "pw"))
	mustCreate(t, s, newTestUser(t, "admin", "c", "pw"))
	n, err := s.DropAll("shop")
	if err != nil || n != 2 {
		t.Fatalf("DropAll = %d, %v; want 2", n, err)
	}
	r := openStore(t, dir)
	if len(r.Users("shop")) != 0 || len(r.Users("admin")) != 1 {
		t.Errorf("after reopening: shop %v, admin %v", r.Users("shop"), r.Users("admin"))
	}
}

// usersFileChanged makes a users file with one user in a new directory,
// lets change alter its bytes, and returns the directory.
func usersFileChanged(t *testing.T, change func(data []byte)) string {
	t.Helper()
	dir := t.TempDir()
	mustCreate(t, openStore(t, dir), newTestUser(t, "admin", "alice", "pw"))
	path := filepath.Join(dir, fileName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	change(data)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A users file whose bytes changed is refused, not read as fewer users.
func TestOpenRefusesADamagedUsersFile(t *testing.T) {
	dir := usersFileChanged(t, func(data []byte) { data[len(data)-2] ^= 0xff })
	if _, err := Open(dir); err == nil {
		t.Error("Open read a damaged users file")
	}
}

func TestOpenRefusesANewerUsersFile(t *testing.T) {
	dir := usersFileChanged(t, func(data []byte) { binary.LittleEndian.PutUint32(data[8:], formatversion.Users.Current+1) })
	if _, err := Open(dir); !errors.Is(err, formatversion.ErrNewer) {
		t.Errorf("Open of a newer users file: %v, want ErrNewer", err)
	}
}

func TestCreatedRoleSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	role := &Role{DB: "shop", Name: "clerk",
		Privileges: []Privilege{
			{Resource: Resource{DB: "shop", Collection: "orders"}, Actions: Find | Insert},
			{Resource: Resource{Cluster: true}, Actions: ServerStatus},
		},
		Roles: []RoleRef{{Role: "read", DB: "catalog"}}}
	mustCreateRole(t, s, role)
	got, ok := openStore(t, dir).Role(RoleRef{Role: "clerk", DB: "shop"})
	if !ok {
		t.Fatal("role lost on reopening")
	}
	if !reflect.DeepEqual(got, role) {
		t.Errorf("reopened role\n %+v\nwant\n %+v", got, role)
	}
}

func TestCreateRoleRefusesDuplicatesAndBuiltinNames(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk"})
	if err := s.CreateRole(&Role{DB: "shop", Name: "clerk"}); !errors.Is(err, ErrRoleExists) {
		t.Errorf("duplicate CreateRole = %v, want ErrRoleExists", err)
	}
	if err := s.CreateRole(&Role{DB: "shop", Name: "read"}); !errors.Is(err, ErrRoleExists) {
		t.Errorf("CreateRole named read = %v, want ErrRoleExists", err)
	}
	if roles := s.Roles("shop"); len(roles) != 1 {
		t.Errorf("Roles(shop) = %v, want clerk alone", roles)
	}
}

func TestMissingRolesAreNotFound(t *testing.T) {
	s := openStore(t, t.TempDir())
	ghost := RoleRef{Role: "ghost", DB: "shop"}
	if err := s.CheckRoleRef(ghost); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("CheckRoleRef = %v, want ErrRoleNotFound", err)
	}
	if err := s.UpdateRole(ghost, func(*Role) error { return nil }); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("UpdateRole = %v, want ErrRoleNotFound", err)
	}
	if err := s.DropRole(ghost); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("DropRole = %v, want ErrRoleNotFound", err)
	}
	if _, err := s.Resolve([]RoleRef{ghost}); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("Resolve = %v, want ErrRoleNotFound", err)
	}
}

func TestCheckRoleRefFindsBuiltinAndDefinedRoles(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk"})
	for _, ref := range []RoleRef{{Role: "read", DB: "shop"}, {Role: "clerk", DB: "shop"}} {
		if err := s.CheckRoleRef(ref); err != nil {
			t.Errorf("CheckRoleRef(%v): %v", ref, err)
		}
	}
	if err := s.CheckRoleRef(RoleRef{Role: "clerk", DB: "other"}); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("a role of another database: %v, want ErrRoleNotFound", err)
	}
}

func TestUpdatedRoleSurvivesReopening(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ref := RoleRef{Role: "clerk", DB: "shop"}
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk"})
	extra := Privilege{Resource: Resource{DB: "shop", Collection: "orders"}, Actions: Remove}
	if err := s.UpdateRole(ref, func(r *Role) error {
		r.Privileges = append(r.Privileges, extra)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := storedRole(t, openStore(t, dir), ref)
	if !reflect.DeepEqual(got.Privileges, []Privilege{extra}) {
		t.Errorf("reopened privileges %v, want %v", got.Privileges, []Privilege{extra})
	}
}

func TestUpdateRoleRefusesInheritingItself(t *testing.T) {
	s := openStore(t, t.TempDir())
	a, b := RoleRef{Role: "a", DB: "shop"}, RoleRef{Role: "b", DB: "shop"}
	mustCreateRole(t, s, &Role{DB: "shop", Name: "a"})
	mustCreateRole(t, s, &Role{DB: "shop", Name: "b", Roles: []RoleRef{a}})
	err := s.UpdateRole(a, func(r *Role) error {
		r.Roles = append(r.Roles, b)
		return nil
	})
	if !errors.Is(err, ErrRoleCycle) {
		t.Fatalf("UpdateRole = %v, want ErrRoleCycle", err)
	}
	if r := storedRole(t, s, a); len(r.Roles) != 0 {
		t.Errorf("a refused update left roles %v", r.Roles)
	}
}

func TestDroppedRoleLeavesItsHoldersAfterReopening(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	clerk := RoleRef{Role: "clerk", DB: "shop"}
	read := RoleRef{Role: "read", DB: "shop"}
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk"})
	mustCreateRole(t, s, &Role{DB: "shop", Name: "manager", Roles: []RoleRef{clerk, read}})
	mustCreate(t, s, newTestUser(t, "shop", "ann", "pw", clerk, read))
	if err := s.DropRole(clerk); err != nil {
		t.Fatal(err)
	}
	r := openStore(t, dir)
	if _, ok := r.Role(clerk); ok {
		t.Error("dropped role back after reopening")
	}
	if u := storedUser(t, r, "shop", "ann"); !reflect.DeepEqual(u.Roles, []RoleRef{read}) {
		t.Errorf("user's roles %v, want %v", u.Roles, []RoleRef{read})
	}
	if m := storedRole(t, r, RoleRef{Role: "manager", DB: "shop"}); !reflect.DeepEqual(m.Roles, []RoleRef{read}) {
		t.Errorf("manager's roles %v, want %v", m.Roles, []RoleRef{read})
	}
}
