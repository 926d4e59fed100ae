package auth

import (
	"fmt"
	"sort"
)

// RoleRef names a role: built in, or defined on a database.
type RoleRef struct{ Role, DB string }

func (r RoleRef) String() string { return r.Role + "@" + r.DB }

// Privileges is what a user's roles grant, resolved once at login so that
// checking a command is two mask operations.
type Privileges struct {
	anyDB   Action            // database actions on every database
	byDB    map[string]Action // database actions on one database
	cluster Action
}

// Allows reports whether the privileges include every action of a on
// database db (cluster actions: on the server).
func (p *Privileges) Allows(a Action, db string) bool {
	if p == nil {
		return false
	}
	if a.IsCluster() {
		return p.cluster&a == a
	}
	return (p.anyDB|p.byDB[db])&a == a
}

// CanUse reports whether the privileges grant anything on database db
// (listDatabases shows a user without the listDatabases action those).
func (p *Privileges) CanUse(db string) bool {
	return p != nil && (p.anyDB != 0 || p.byDB[db] != 0)
}

func (p *Privileges) add(g grant, db string) {
	if p.byDB == nil {
		p.byDB = map[string]Action{}
	}
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
		DropCollection | CreateIndex | DropIndex | DropDatabase | RenameCollectionSameDB | VCRead | VCAdmin
	userAdminActions = CreateUser | DropUser | ViewUser | GrantRole | RevokeRole | ChangePassword |
		ChangeCustomData | CreateRole | DropRole | ViewRole
	monitorActions = ServerStatus | ListDatabases | InProg | ReplSetGetStatus | ReplSetGetConfig |
		GetParameter | GetCmdLineOpts | GetLog | HostInfo
	hostActions    = KillOp | SetParameter | Shutdown | KillAnySession
	managerActions = ReplSetConfigure | ReplSetGetConfig | ReplSetGetStatus | ListDatabases
	allDBActions   = readWriteActions | dbAdminActions | userAdminActions
	allCluster     = clusterActions
)

// builtinRoles is the one table of built-in roles, sorted by name.
var builtinRoles = map[string]grant{
	"backup":               {anyDB: readActions, cluster: ListDatabases | ServerStatus | GetParameter, adminOnly: true},
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
	"restore":              {anyDB: Insert | Update | Remove | CreateCollection | DropCollection | CreateIndex | ListCollections | CreateUser | CreateRole | GrantRole, cluster: ListDatabases, adminOnly: true},
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

// Resolve is the privileges a list of roles grants.
func Resolve(roles []RoleRef) (*Privileges, error) {
	p := &Privileges{}
	for _, r := range roles {
		if err := CheckRole(r); err != nil {
			return nil, err
		}
		p.add(builtinRoles[r.Role], r.DB)
	}
	return p, nil
}

// RolePrivileges describes a built-in role's privileges as mongod's
// rolesInfo and usersInfo showPrivileges do: resource, actions.
type RolePrivileges struct {
	DB      string // "" with Cluster false: every database
	Cluster bool
	Actions []string
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
	if p.anyDB != 0 {
		out = append(out, RolePrivileges{Actions: p.anyDB.Names()})
	}
	if p.cluster != 0 {
		out = append(out, RolePrivileges{Cluster: true, Actions: p.cluster.Names()})
	}
	return out
}
