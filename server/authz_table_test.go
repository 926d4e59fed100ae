package server

import (
	"sort"
	"testing"
)

// selfAuthorized are the commands the table lets any logged-in user run,
// each with where it checks what its arguments name: a command that takes
// a namespace, a cursor id, a session id or a role without saying so in
// its row must be here, or this test fails.
var selfAuthorized = map[string]string{
	"bulkWrite":                "every namespace of nsInfo, and the branch it writes, before any op runs (authorizeBulk)",
	"getMore":                  "the cursor's session, user and namespace (checkCursorOwner)",
	"killCursors":              "the cursor's user; naming another's refuses the command (killCursorsIDs)",
	"listDatabases":            "lists only what the user's roles grant without the listDatabases action",
	"startSession":             "the session is the user's (sessionUID)",
	"endSessions":              "names only the user's sessions (sessionUID)",
	"refreshSessions":          "names only the user's sessions (sessionUID)",
	"killSessions":             "names only the user's sessions; others' take killAllSessions",
	"commitTransaction":        "the transaction of the user's own session",
	"abortTransaction":         "the transaction of the user's own session",
	"updateUser":               "changePassword, changeCustomData, grantRole and revokeRole per field (grantRights.userUpdate)",
	"grantRolesToUser":         "grantRole on each role's database",
	"revokeRolesFromUser":      "revokeRole on each role's database",
	"updateRole":               "grantRole and revokeRole on what changes (grantRights)",
	"grantPrivilegesToRole":    "grantRole on each privilege's database",
	"revokePrivilegesFromRole": "revokeRole on each privilege's database",
	"grantRolesToRole":         "grantRole on each role's database",
	"revokeRolesFromRole":      "revokeRole on each role's database",
	"convertShardKeyToHashed":  "reads no data: hashes the value it is given",
}

// TestCommandTableAuthorizesWhatItNames walks the command table: every
// row declares a requirement, and a row open to any logged-in user is one
// whose handler authorizes what its arguments name.
func TestCommandTableAuthorizesWhatItNames(t *testing.T) {
	var loose []string
	for _, c := range commandTable {
		switch {
		case c.need == (requirement{}):
			t.Errorf("%s declares no requirement", c.name)
		case c.need.byArguments && selfAuthorized[c.name] == "":
			loose = append(loose, c.name)
		case c.need.anyUser && selfAuthorized[c.name] == "":
			loose = append(loose, c.name)
		case !c.need.anyUser && selfAuthorized[c.name] != "":
			t.Errorf("%s is listed as checking its own arguments but its row needs %v", c.name, c.need.action.Names())
		}
	}
	sort.Strings(loose)
	if len(loose) > 0 {
		t.Fatalf("commands any logged-in user may run with no word on how they authorize what they name: %v", loose)
	}
}
