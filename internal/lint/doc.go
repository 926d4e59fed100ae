// Package lint holds the repository's own lint checks, run by go test as
// part of make test: file sizes, error codes by name, package comments,
// docs that speak of the product, and the README's length. The rules and
// their reasons are in lint_test.go beside each check.
package lint
