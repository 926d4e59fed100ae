package text

import "testing"

func TestStem(t *testing.T) {
	for in, want := range map[string]string{"running": "run", "runs": "run", "ponies": "poni", "caresses": "caress",
		"cats": "cat", "hopeful": "hope", "relational": "relat"} {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}
