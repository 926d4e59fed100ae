package auth

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// resolveStored resolves roles against s, failing the test on an error.
func resolveStored(t *testing.T, s *Store, roles ...RoleRef) *Privileges {
	t.Helper()
	p, err := s.Resolve(roles)
	if err != nil {
		t.Fatalf("Resolve(%v): %v", roles, err)
	}
	return p
}

func TestCollectionPrivilegeAllowsThatCollectionOnly(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreateRole(t, s, &Role{DB: "shop", Name: "orderReader", Privileges: []Privilege{
		{Resource: Resource{DB: "shop", Collection: "orders"}, Actions: Find},
	}})
	p := resolveStored(t, s, RoleRef{Role: "orderReader", DB: "shop"})
	if !p.AllowsOn(Find, "shop", "orders") {
		t.Error("no find on shop.orders")
	}
	if p.AllowsOn(Find, "shop", "customers") || p.AllowsOn(Find, "other", "orders") {
		t.Error("find on a collection the role does not name")
	}
	if p.Allows(Find, "shop") {
		t.Error("a collection's privilege allows the whole database")
	}
	if p.AllowsOn(Insert, "shop", "orders") {
		t.Error("insert on shop.orders")
	}
	if !p.CanUse("shop") || p.CanUse("sho") || p.CanUse("other") {
		t.Error("CanUse: want shop alone")
	}
}

func TestResourceShapesOfUserDefinedPrivileges(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreateRole(t, s, &Role{DB: "admin", Name: "mixed", Privileges: []Privilege{
		{Resource: Resource{DB: "shop"}, Actions: Insert},                // every collection of shop
		{Resource: Resource{Collection: "logs"}, Actions: Remove},        // logs of every database
		{Resource: Resource{}, Actions: ListCollections},                 // every database
		{Resource: Resource{Cluster: true}, Actions: ServerStatus},       // the server
		{Resource: Resource{DB: "shop", Collection: "x"}, Actions: Find}, // one collection
	}})
	p := resolveStored(t, s, RoleRef{Role: "mixed", DB: "admin"})
	checks := []struct {
		what      string
		got, want bool
	}{
		{"insert on shop", p.Allows(Insert, "shop"), true},
		{"insert on shop.any", p.AllowsOn(Insert, "shop", "any"), true},
		{"insert on other", p.Allows(Insert, "other"), false},
		{"remove on any.logs", p.AllowsOn(Remove, "any", "logs"), true},
		{"remove on any", p.Allows(Remove, "any"), false},
		{"listCollections everywhere", p.AllowsEverywhere(ListCollections), true},
		{"insert everywhere", p.AllowsEverywhere(Insert), false},
		{"serverStatus", p.Allows(ServerStatus, ""), true},
		{"shutdown", p.Allows(Shutdown, ""), false},
		{"find and insert on shop.x", p.AllowsOn(Find|Insert, "shop", "x"), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
}

// A user-defined role grants what the roles it inherits grant, built in
// or user-defined, through any depth.
func TestUserDefinedRoleInheritsRoles(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreateRole(t, s, &Role{DB: "shop", Name: "logWriter", Privileges: []Privilege{
		{Resource: Resource{DB: "shop", Collection: "logs"}, Actions: Insert},
	}, Roles: []RoleRef{{Role: "read", DB: "reports"}}})
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk", Privileges: []Privilege{
		{Resource: Resource{DB: "shop", Collection: "orders"}, Actions: Update},
	}, Roles: []RoleRef{{Role: "logWriter", DB: "shop"}}})

	p := resolveStored(t, s, RoleRef{Role: "clerk", DB: "shop"})
	if !p.AllowsOn(Update, "shop", "orders") {
		t.Error("clerk's own privilege missing")
	}
	if !p.AllowsOn(Insert, "shop", "logs") {
		t.Error("privilege inherited from logWriter missing")
	}
	if !p.Allows(Find, "reports") {
		t.Error("read@reports, inherited through logWriter, missing")
	}
	if p.Allows(Insert, "reports") || p.AllowsOn(Insert, "shop", "orders") {
		t.Error("inheritance granted more than the roles do")
	}
	want := []RoleRef{{Role: "clerk", DB: "shop"}, {Role: "logWriter", DB: "shop"}, {Role: "read", DB: "reports"}}
	if got := s.InheritedRoles(want[:1]); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("InheritedRoles = %v, want %v", got, want)
	}
}

func TestInheritingAMissingRoleIsNotFound(t *testing.T) {
	s := openStore(t, t.TempDir())
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk", Roles: []RoleRef{{Role: "ghost", DB: "shop"}}})
	if _, err := s.Resolve([]RoleRef{{Role: "clerk", DB: "shop"}}); !errors.Is(err, ErrRoleNotFound) {
		t.Errorf("Resolve = %v, want ErrRoleNotFound", err)
	}
}

func TestDroppingAnInheritedRoleTakesItsPrivilegesAway(t *testing.T) {
	s := openStore(t, t.TempDir())
	writer := RoleRef{Role: "writer", DB: "shop"}
	mustCreateRole(t, s, &Role{DB: "shop", Name: "writer", Privileges: []Privilege{
		{Resource: Resource{DB: "shop"}, Actions: Insert},
	}})
	mustCreateRole(t, s, &Role{DB: "shop", Name: "clerk", Roles: []RoleRef{writer, {Role: "read", DB: "shop"}}})
	clerk := RoleRef{Role: "clerk", DB: "shop"}
	if !resolveStored(t, s, clerk).Allows(Insert, "shop") {
		t.Fatal("clerk cannot insert before writer is dropped")
	}
	if err := s.DropRole(writer); err != nil {
		t.Fatal(err)
	}
	p := resolveStored(t, s, clerk)
	if p.Allows(Insert, "shop") {
		t.Error("clerk can still insert once writer is dropped")
	}
	if !p.Allows(Find, "shop") {
		t.Error("dropping writer took read@shop away")
	}
}

// Store.Resolve resolves built-in roles as the package's Resolve does.
func TestStoreResolvesBuiltinRoles(t *testing.T) {
	s := openStore(t, t.TempDir())
	p := resolveStored(t, s, RoleRef{Role: "readWrite", DB: "shop"}, RoleRef{Role: "clusterMonitor", DB: "admin"})
	if !p.Allows(Insert, "shop") || !p.Allows(ServerStatus, "") || p.Allows(Insert, "other") {
		t.Error("built-in roles resolved differently through the store")
	}
}

func TestPrivilegesRoundTripThroughBSON(t *testing.T) {
	want := []Privilege{
		{Resource: Resource{DB: "shop", Collection: "orders"}, Actions: Find | Update},
		{Resource: Resource{Cluster: true}, Actions: ServerStatus | InProg},
	}
	got, err := DecodePrivileges(EncodePrivileges(want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("DecodePrivileges(EncodePrivileges(%v)) = %v, %v", want, got, err)
	}
}

// An unknown action is refused in mongod's words, which clients see.
func TestDecodePrivilegesRefusesAnUnknownAction(t *testing.T) {
	res := bsoncore.NewDocumentBuilder().AppendString("db", "shop").AppendString("collection", "").Build()
	acts := bsoncore.NewArrayBuilder().AppendString("find").AppendString("fly").Build()
	priv := bsoncore.NewDocumentBuilder().AppendDocument("resource", res).AppendArray("actions", acts).Build()
	_, err := DecodePrivileges(bsoncore.NewArrayBuilder().AppendDocument(priv).Build())
	if err == nil || !strings.Contains(err.Error(), "Unrecognized action privilege string: fly") {
		t.Errorf("DecodePrivileges with action fly: %v", err)
	}
}
