package query

// The operator tables (the *_registry.go files) are lists of rows in
// groups by topic, each group sorted by name; a map by name, built from
// the table once, answers the look-ups.

// tableRow is a row of an operator table.
type tableRow interface{ rowName() string }

// indexTable maps a table's rows by name.
func indexTable[R tableRow](groups [][]R) map[string]R {
	m := map[string]R{}
	for _, group := range groups {
		for _, r := range group {
			m[r.rowName()] = r
		}
	}
	return m
}
