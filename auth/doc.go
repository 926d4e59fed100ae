// Package auth owns authentication and authorization: the server's users
// and roles and the file they live in (store.go, docs/format/auth.md), the
// SCRAM-SHA-1 and SCRAM-SHA-256 conversations and the credentials they
// check (scram.go, on github.com/xdg-go/scram), and the privileges that
// built-in roles grant (roles.go) as sets of actions (actions.go) that the
// server checks for every command. The design is in docs/design/auth.md.
package auth
