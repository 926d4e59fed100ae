package server

import "sort"

// WatchDeclaredArgs makes parseArgs report each command's declared
// fields to f, until stop is called (for TestCommandArgumentsWalk).
func WatchDeclaredArgs(f func(cmd string, fields []string)) (stop func()) {
	hook := func(cmd string, fields []string) {
		sort.Strings(fields)
		f(cmd, fields)
	}
	argsDeclared.Store(&hook)
	return func() { argsDeclared.Store(nil) }
}

// CommandNames are the names in the command table, and whether each runs
// only on admin.
func CommandNames() map[string]bool {
	out := map[string]bool{}
	for _, c := range commandTable {
		out[c.name] = bool(c.access)
	}
	return out
}

// CommandFirstValues are, by command, the kinds of first value the
// command table gives (firstValue), for the commands whose first value is
// not a collection's name.
func CommandFirstValues() map[string]string {
	out := map[string]string{}
	for _, c := range commandTable {
		if c.first != firstAny {
			out[c.name] = string(c.first)
		}
	}
	return out
}

// IgnoredArgs are the rows of ignoredArgs.
func IgnoredArgs() map[string]string { return ignoredArgs }
