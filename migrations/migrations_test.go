package migrations

import (
	"testing"
	"testing/fstest"
)

func TestEmbeddedLoad(t *testing.T) {
	for name, ms := range map[string][]Migration{"postgres": Postgres(), "sqlite": SQLite()} {
		if len(ms) == 0 {
			t.Errorf("%s: no migrations embedded", name)
		}
		for i, m := range ms {
			if m.Version != i+1 || len(m.Checksum) != 64 || m.SQL == "" {
				t.Errorf("%s: bad migration %+v", name, m.Name)
			}
		}
	}
}

func TestLoadRejectsGapsAndBadNames(t *testing.T) {
	cases := map[string]fstest.MapFS{
		"gap":     {"d/0001_a.sql": {Data: []byte("x")}, "d/0003_c.sql": {Data: []byte("y")}},
		"badname": {"d/1_a.sql": {Data: []byte("x")}},
		"dup":     {"d/0001_a.sql": {Data: []byte("x")}, "d/0001_b.sql": {Data: []byte("y")}},
	}
	for name, fsys := range cases {
		if _, err := Load(fsys, "d"); err == nil {
			t.Errorf("%s: expected an error", name)
		}
	}
}
