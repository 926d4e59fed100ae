package auth

import (
	"fmt"
	"sort"
	"strings"
)

// RoleRef names a role: built in, or defined on a database.
type RoleRef struct{ Role, DB string }

func (r RoleRef) String() string { return r.Role + "@" + r.DB }

// Privileges is what a user's roles grant, resolved once at login so that
// checking a command is two mask operations.
type Privileges struct {
	anyDB   Action            // database actions on every database
	byDB    map[string]Action // database actions on one database
	byNS    map[string]Action // on one collection ("db.coll"), from user-defined roles
	anyColl map[string]Action // on a collection name in every database
	cluster Action
}

// Allows reports whether the privileges include every action of a on
// database db (cluster actions: on the server).
func (p *Privileges) Allows(a Action, db string) bool { return p.AllowsOn(a, db, "") }

// AllowsEverywhere reports whether the privileges include every action
// of a on every database (the AnyDatabase roles, root): what granting a
// privilege on every database or on the cluster takes.
func (p *Privileges) AllowsEverywhere(a Action) bool {
	return p != nil && p.anyDB&a == a
}

// AllowsOn is Allows for a command on one collection (coll "": none),
// which privileges granted on that collection alone also allow.
func (p *Privileges) AllowsOn(a Action, db, coll string) bool {
	if p == nil {
		return false
	}
	if a.IsCluster() {
		return p.cluster&a == a
	}
	have := p.anyDB | p.byDB[db]
	if coll != "" {
		have |= p.byNS[db+"."+coll] | p.anyColl[coll]
	}
	return have&a == a
}

// grantOn adds user-defined privileges on a resource.
func (p *Privileges) grantOn(r Resource, a Action) {
	switch {
	case r.Cluster:
		p.cluster |= a & clusterActions
	case r.DB == "" && r.Collection == "":
		p.anyDB |= a &^ clusterActions
	case r.Collection == "":
		p.byDB[r.DB] |= a &^ clusterActions
	case r.DB == "":
		p.anyColl[r.Collection] |= a &^ clusterActions
	default:
		p.byNS[r.DB+"."+r.Collection] |= a &^ clusterActions
	}
}

// CanUse reports whether the privileges grant anything on database db
// (listDatabases shows a user without the listDatabases action those).
func (p *Privileges) CanUse(db string) bool {
	if p == nil {
		return false
	}
	if p.anyDB != 0 || p.byDB[db] != 0 || len(p.anyColl) > 0 {
		return true
	}
	for ns := range p.byNS {
		if len(ns) > len(db) && ns[:len(db)] == db && ns[len(db)] == '.' {
			return true
		}
	}
	return false
}

func newPrivileges() *Privileges {
	return &Privileges{byDB: map[string]Action{}, byNS: map[string]Action{}, anyColl: map[string]Action{}}
}

func (p *Privileges) add(g grant, db string) {
	p.byDB[db] |= g.db
	p.anyDB |= g.anyDB
	p.cluster |= g.cluster
}

// grant is what a built-in role gives: actions on its own database, on
// every database, and on the cluster. adminOnly roles exist only on admin.
type grant struct {
	db, anyDB, cluster Action
	adminOnly          bool
}

// Action sets of the database roles (mongod's built-in roles).
const (
	readActions      = Find | ListCollections | ListIndexes | CollStats | DBStats | KillCursors | VCRead
	readWriteActions = readActions | Insert | Update | Remove | CreateCollection | DropCollection |
		CreateIndex | DropIndex | RenameCollectionSameDB | VCWrite
	dbAdminActions = CollMod | CollStats | DBStats | ListCollections | ListIndexes | CreateCollection |
		DropCollection | CreateIndex | DropIndex | DropDatabase | RenameCollectionSameDB | VCRead | VCAdmin |
		BypassDocumentValidation | EnableProfiler
	userAdminActions = CreateUser | DropUser | ViewUser | GrantRole | RevokeRole | ChangePassword |
		ChangeCustomData | CreateRole | DropRole | ViewRole
	monitorActions = ServerStatus | ListDatabases | InProg | ReplSetGetStatus | ReplSetGetConfig |
		GetParameter | GetCmdLineOpts | GetLog | HostInfo | Top
	hostActions    = KillOp | SetParameter | Shutdown | KillAnySession | LogRotate | Fsync | Unlock
	managerActions = ReplSetConfigure | ReplSetGetConfig | ReplSetGetStatus | ListDatabases
	allDBActions   = readWriteActions | dbAdminActions | userAdminActions
	allCluster     = clusterActions
)

// builtinRoles is the one table of built-in roles, sorted by name.
var builtinRoles = map[string]grant{
	"backup":               {anyDB: readActions | ViewUser | ViewRole, cluster: ListDatabases | ServerStatus | GetParameter, adminOnly: true},
	"clusterAdmin":         {anyDB: DropDatabase | CollStats | DBStats, cluster: monitorActions | hostActions | managerActions, adminOnly: true},
	"clusterManager":       {cluster: managerActions, adminOnly: true},
	"clusterMonitor":       {anyDB: CollStats | DBStats | ListCollections | ListIndexes, cluster: monitorActions, adminOnly: true},
	"dbAdmin":              {db: dbAdminActions},
	"dbAdminAnyDatabase":   {anyDB: dbAdminActions, cluster: ListDatabases, adminOnly: true},
	"dbOwner":              {db: allDBActions},
	"hostManager":          {cluster: hostActions, adminOnly: true},
	"read":                 {db: readActions},
	"readAnyDatabase":      {anyDB: readActions, cluster: ListDatabases, adminOnly: true},
	"readWrite":            {db: readWriteActions},
	"readWriteAnyDatabase": {anyDB: readWriteActions, cluster: ListDatabases, adminOnly: true},
	"restore":              {anyDB: Insert | Update | Remove | CreateCollection | DropCollection | CreateIndex | ListCollections | CreateUser | CreateRole | GrantRole | BypassDocumentValidation, cluster: ListDatabases, adminOnly: true},
	"root":                 {anyDB: allDBActions, cluster: allCluster, adminOnly: true},
	"userAdmin":            {db: userAdminActions},
	"userAdminAnyDatabase": {anyDB: userAdminActions, cluster: ListDatabases, adminOnly: true},
}

// BuiltinRoleNames lists the built-in roles, sorted.
func BuiltinRoleNames() []string {
	out := make([]string, 0, len(builtinRoles))
	for n := range builtinRoles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// CheckRole reports ErrRoleNotFound for a role that is not built in on
// its database (the AnyDatabase and cluster roles exist only on admin).
func CheckRole(r RoleRef) error {
	g, ok := builtinRoles[r.Role]
	if !ok || (g.adminOnly && r.DB != "admin") {
		return fmt.Errorf("%w: No role named %s", ErrRoleNotFound, r)
	}
	return nil
}

// Resolve is the privileges a list of built-in roles grants.
func Resolve(roles []RoleRef) (*Privileges, error) {
	return resolve(roles, func(RoleRef) (*Role, bool) { return nil, false })
}

// resolve expands roles, built in or user-defined (found by lookup), and
// the roles those inherit, each once.
func resolve(roles []RoleRef, lookup func(RoleRef) (*Role, bool)) (*Privileges, error) {
	p := newPrivileges()
	seen := map[RoleRef]bool{}
	var walk func([]RoleRef) error
	walk = func(refs []RoleRef) error {
		for _, r := range refs {
			if seen[r] {
				continue
			}
			seen[r] = true
			if CheckRole(r) == nil {
				p.add(builtinRoles[r.Role], r.DB)
				continue
			}
			role, ok := lookup(r)
			if !ok {
				return fmt.Errorf("%w: No role named %s", ErrRoleNotFound, r)
			}
			for _, pr := range role.Privileges {
				p.grantOn(pr.Resource, pr.Actions)
			}
			if err := walk(role.Roles); err != nil {
				return err
			}
		}
		return nil
	}
	return p, walk(roles)
}

// IsBuiltin reports a built-in role.
func IsBuiltin(r RoleRef) bool { return CheckRole(r) == nil }

// RolePrivileges describes a built-in role's privileges as mongod's
// rolesInfo and usersInfo showPrivileges do: resource, actions.
type RolePrivileges struct {
	DB         string // "" with Cluster false: every database
	Collection string // "": every collection
	Cluster    bool
	Actions    []string
}

// Describe lists what the roles grant, for showPrivileges.
func (p *Privileges) Describe() []RolePrivileges {
	var out []RolePrivileges
	dbs := make([]string, 0, len(p.byDB))
	for db := range p.byDB {
		dbs = append(dbs, db)
	}
	sort.Strings(dbs)
	for _, db := range dbs {
		if a := p.byDB[db]; a != 0 {
			out = append(out, RolePrivileges{DB: db, Actions: a.Names()})
		}
	}
	for _, ns := range sortedKeys(p.byNS) {
		db, coll, _ := strings.Cut(ns, ".")
		out = append(out, RolePrivileges{DB: db, Collection: coll, Actions: p.byNS[ns].Names()})
	}
	for _, coll := range sortedKeys(p.anyColl) {
		out = append(out, RolePrivileges{Collection: coll, Actions: p.anyColl[coll].Names()})
	}
	if p.anyDB != 0 {
		out = append(out, RolePrivileges{Actions: p.anyDB.Names()})
	}
	if p.cluster != 0 {
		out = append(out, RolePrivileges{Cluster: true, Actions: p.cluster.Names()})
	}
	return out
}

func sortedKeys(m map[string]Action) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
