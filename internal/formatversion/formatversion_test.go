package formatversion

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	f := &Format{Name: "test file", Magic: "DUMBOTST", Current: 3, Oldest: 2, Upgrade: "do the thing"}
	for _, c := range []struct {
		v    uint32
		want error
	}{{1, ErrOlder}, {2, nil}, {3, nil}, {4, ErrNewer}} {
		err := f.Check(c.v)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("Check(%d) = %v, want %v", c.v, err, c.want)
		}
	}
	if msg := f.Check(1).Error(); !strings.Contains(msg, "do the thing") || !strings.Contains(msg, "test file") {
		t.Errorf("older: %q does not say what upgrades it", msg)
	}
	if msg := f.Check(9).Error(); !strings.Contains(msg, "version 9") || !strings.Contains(msg, "(3)") {
		t.Errorf("newer: %q does not name both versions", msg)
	}
}

func TestReadHeader(t *testing.T) {
	f := &Format{Name: "test file", Magic: "DUMBOTST", Current: 1, Oldest: 1}
	h := f.Header()
	if v, err := f.ReadHeader(append(h[:], "body"...)); v != 1 || err != nil {
		t.Fatalf("ReadHeader(own header) = %d, %v", v, err)
	}
	if _, err := f.ReadHeader(h[:7]); !errors.Is(err, ErrNoHeader) {
		t.Errorf("short: %v", err)
	}
	if _, err := WAL.ReadHeader(h[:]); !errors.Is(err, ErrNoHeader) {
		t.Errorf("another format's magic: %v", err)
	}
	h[8] = 2
	if v, err := f.ReadHeader(h[:]); v != 2 || !errors.Is(err, ErrNewer) {
		t.Errorf("newer header: %d, %v", v, err)
	}
}

func TestUpgradeAppliesStepsInOrder(t *testing.T) {
	f := &Format{Name: "test file", Current: 4, Oldest: 1}
	steps := Steps[string]{
		1: func(s string) (string, error) { return s + ">2", nil },
		2: func(s string) (string, error) { return s + ">3", nil },
		3: func(s string) (string, error) { return s + ">4", nil },
	}
	if got, err := Upgrade(f, 2, "v2", steps); got != "v2>3>4" || err != nil {
		t.Errorf("Upgrade from 2 = %q, %v", got, err)
	}
	if got, err := Upgrade(f, 4, "v4", steps); got != "v4" || err != nil {
		t.Errorf("Upgrade from current = %q, %v", got, err)
	}
	delete(steps, 2)
	if _, err := Upgrade(f, 1, "v1", steps); err == nil || !strings.Contains(err.Error(), "from version 2") {
		t.Errorf("missing step: %v", err)
	}
	if _, err := Upgrade(f, 5, "v5", steps); !errors.Is(err, ErrNewer) {
		t.Errorf("newer: %v", err)
	}
}

// TestVersionsPageListsEveryFormat keeps docs/format/versions.md's table
// and All in step: each format's row names its magic, the version written
// and the oldest read.
func TestVersionsPageListsEveryFormat(t *testing.T) {
	page, err := os.ReadFile("../../docs/format/versions.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(page), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) == 8 {
			rows[strings.TrimSpace(cells[1])] = cells[2:]
		}
	}
	magics := map[string]bool{}
	for _, f := range All {
		row, ok := rows[f.Name]
		if !ok {
			t.Errorf("versions.md has no row for %s", f.Name)
			continue
		}
		magic := strings.Trim(strings.TrimSpace(row[1]), "`")
		if f.Magic != "" && magic != f.Magic || f.Magic == "" && magic != "(none)" {
			t.Errorf("%s: magic %q in versions.md, %q in All", f.Name, magic, f.Magic)
		}
		if got := strings.TrimSpace(row[2]); got != strconv.Itoa(int(f.Current)) {
			t.Errorf("%s: versions.md writes %s, All %d", f.Name, got, f.Current)
		}
		if got := strings.TrimSpace(row[3]); got != strconv.Itoa(int(f.Oldest)) {
			t.Errorf("%s: versions.md reads from %s, All %d", f.Name, got, f.Oldest)
		}
		if f.Magic != "" && magics[f.Magic] {
			t.Errorf("magic %s used twice", f.Magic)
		}
		magics[f.Magic] = true
	}
}
