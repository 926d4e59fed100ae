// Package server owns everything between a socket and the storage engine:
// listeners (TCP and Unix), the per-connection loop, the command table (one
// file per command or family, cmd_*.go), cursors, reply building, MongoDB
// error shapes, counters and logging glue.
package server
