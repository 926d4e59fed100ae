// Package server owns everything between a socket and the storage engine:
// listeners (TCP and Unix), the per-connection loop, the command table (one
// file per command or family, cmd_*.go), cursors, change streams
// (changestream*.go: the $changeStream stage, its events and resume
// tokens, on the storage engine's change log), reply building, MongoDB
// error shapes, counters and logging glue. Commands parse their arguments
// here (request.go) and leave planning, scans and explain's plan tree to
// package plan.
package server
