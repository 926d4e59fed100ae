package auth

import (
	"errors"
	"slices"
	"testing"
)

// resolveBuiltin resolves built-in roles, failing the test on an error.
func resolveBuiltin(t *testing.T, roles ...RoleRef) *Privileges {
	t.Helper()
	p, err := Resolve(roles)
	if err != nil {
		t.Fatalf("Resolve(%v): %v", roles, err)
	}
	return p
}

func TestReadGrantsReadingItsOwnDatabaseOnly(t *testing.T) {
	p := resolveBuiltin(t, RoleRef{Role: "read", DB: "shop"})
	if !p.Allows(Find, "shop") || !p.Allows(Find|ListCollections, "shop") {
		t.Error("read@shop does not allow reading shop")
	}
	if p.Allows(Insert, "shop") {
		t.Error("read@shop allows insert")
	}
	if p.Allows(Find, "other") {
		t.Error("read@shop allows reading another database")
	}
	if p.AllowsEverywhere(Find) {
		t.Error("read@shop allows reading every database")
	}
	if p.Allows(ServerStatus, "shop") {
		t.Error("read@shop allows a cluster action")
	}
}

// Allows takes a set of actions and grants it only when every one is held.
func TestAllowsNeedsEveryActionOfTheSet(t *testing.T) {
	p := resolveBuiltin(t, RoleRef{Role: "read", DB: "shop"})
	if p.Allows(Find|Insert, "shop") {
		t.Error("read@shop allows find and insert together")
	}
	rw := resolveBuiltin(t, RoleRef{Role: "readWrite", DB: "shop"})
	if !rw.Allows(Find|Insert|Update|Remove, "shop") {
		t.Error("readWrite@shop does not allow find, insert, update and remove")
	}
	if rw.Allows(CreateUser, "shop") {
		t.Error("readWrite@shop allows createUser")
	}
}

func TestRolesOfSeveralDatabasesAddUp(t *testing.T) {
	p := resolveBuiltin(t, RoleRef{Role: "read", DB: "a"}, RoleRef{Role: "readWrite", DB: "b"})
	if !p.Allows(Find, "a") || p.Allows(Insert, "a") {
		t.Error("a: want find without insert")
	}
	if !p.Allows(Insert, "b") {
		t.Error("b: want insert")
	}
}

func TestAnyDatabaseRolesExistOnlyOnAdmin(t *testing.T) {
	for _, role := range []string{"readAnyDatabase", "root", "clusterMonitor", "backup"} {
		ref := RoleRef{Role: role, DB: "shop"}
		if err := CheckRole(ref); !errors.Is(err, ErrRoleNotFound) {
			t.Errorf("CheckRole(%v) = %v, want ErrRoleNotFound", ref, err)
		}
		if _, err := Resolve([]RoleRef{ref}); !errors.Is(err, ErrRoleNotFound) {
			t.Errorf("Resolve(%v) = %v, want ErrRoleNotFound", ref, err)
		}
		if IsBuiltin(ref) {
			t.Errorf("IsBuiltin(%v) on a database other than admin", ref)
		}
		if err := CheckRole(RoleRef{Role: role, DB: "admin"}); err != nil {
			t.Errorf("CheckRole(%s@admin): %v", role, err)
		}
	}
}

func TestReadAnyDatabaseReadsEveryDatabase(t *testing.T) {
	p := resolveBuiltin(t, RoleRef{Role: "readAnyDatabase", DB: "admin"})
	if !p.AllowsEverywhere(Find) || !p.Allows(Find, "whatever") || !p.AllowsOn(Find, "x", "y") {
		t.Error("readAnyDatabase does not allow reading everywhere")
	}
	if p.AllowsEverywhere(Insert) || p.Allows(Insert, "whatever") {
		t.Error("readAnyDatabase allows insert")
	}
	if !p.Allows(ListDatabases, "") {
		t.Error("readAnyDatabase does not allow listDatabases")
	}
}

func TestRootAllowsEveryDatabaseAndClusterAction(t *testing.T) {
	p := resolveBuiltin(t, RoleRef{Role: "root", DB: "admin"})
	if !p.AllowsEverywhere(Find | Insert | DropDatabase | CreateUser | CreateRole) {
		t.Error("root lacks a database action on every database")
	}
	for _, a := range []Action{Shutdown, KillOp, ServerStatus, SetParameter, ListDatabases} {
		if !p.Allows(a, "") {
			t.Errorf("root lacks cluster action %v", a.Names())
		}
	}
}

// A cluster action is on the server, whatever database the command names.
func TestClusterActionIgnoresTheDatabase(t *testing.T) {
	p := resolveBuiltin(t, RoleRef{Role: "clusterMonitor", DB: "admin"})
	if !p.Allows(ServerStatus, "shop") || !p.AllowsOn(ServerStatus, "shop", "orders") {
		t.Error("clusterMonitor does not allow serverStatus from another database")
	}
	if p.Allows(Shutdown, "admin") {
		t.Error("clusterMonitor allows shutdown")
	}
	if p.AllowsEverywhere(ServerStatus) {
		t.Error("AllowsEverywhere counts a cluster action as a database action")
	}
}

func TestUnknownBuiltinRoleIsNotFound(t *testing.T) {
	if _, err := Resolve([]RoleRef{{Role: "readEverything", DB: "admin"}}); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("Resolve of an unknown role: %v, want ErrRoleNotFound", err)
	}
}

func TestNilPrivilegesAllowNothing(t *testing.T) {
	var p *Privileges
	if p.Allows(Find, "shop") || p.AllowsOn(Find, "shop", "orders") || p.AllowsEverywhere(Find) || p.CanUse("shop") {
		t.Error("nil privileges allow something")
	}
}

func TestNoRolesAllowNothing(t *testing.T) {
	p := resolveBuiltin(t)
	if p.Allows(Find, "shop") || p.Allows(ServerStatus, "") || p.CanUse("shop") {
		t.Error("no roles allow something")
	}
}

func TestBuiltinRoleNamesAreSortedAndResolve(t *testing.T) {
	names := BuiltinRoleNames()
	if !slices.IsSorted(names) {
		t.Errorf("not sorted: %v", names)
	}
	for _, want := range []string{"read", "readWrite", "dbAdmin", "dbOwner", "userAdmin", "root"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s missing from %v", want, names)
		}
	}
	for _, n := range names {
		if err := CheckRole(RoleRef{Role: n, DB: "admin"}); err != nil {
			t.Errorf("listed role %s@admin: %v", n, err)
		}
	}
}

func TestActionNamesRoundTrip(t *testing.T) {
	for _, a := range []Action{Find, Insert, ServerStatus, BypassDocumentValidation, VCRead, Shutdown} {
		names := a.Names()
		if len(names) != 1 {
			t.Fatalf("%d: names %v", a, names)
		}
		if back, ok := ActionNamed(names[0]); !ok || back != a {
			t.Errorf("ActionNamed(%q) = %v, %v; want %v", names[0], back, ok, a)
		}
	}
	if _, ok := ActionNamed("fly"); ok {
		t.Error("ActionNamed of an unknown name succeeded")
	}
}
