package envcrypt

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/envseal"
)

func TestKeyFileCreateLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultKeyFileName)
	k, err := CreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	if _, err := CreateKeyFile(path); err == nil {
		t.Fatal("CreateKeyFile over an existing file must fail")
	}
	back, err := LoadKeyFile(path)
	if err != nil || back.ID() != k.ID() || len(k.ID()) != 16 {
		t.Fatalf("reload: %v %s %s", err, back.ID(), k.ID())
	}
}

func TestKeyFileRefusals(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	if _, err := CreateKeyFile(good); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := map[string]struct {
		path, reason string
	}{
		"missing":        {filepath.Join(dir, "nope.key"), "does not exist"},
		"world-readable": {write("world.key", string(data), 0o644), "group or others"},
		"group-readable": {write("group.key", string(data), 0o640), "group or others"},
		"not a key":      {write("text.key", "hello", 0o600), "not an env key"},
		"damaged":        {write("short.key", envseal.KeyTextPrefix+"0011223344556677:AAAA", 0o600), "damaged"},
		"too large":      {write("big.key", strings.Repeat("x", 300), 0o600), "larger than"},
		"directory":      {dir, "not a regular file"},
	}
	for name, tc := range cases {
		_, err := LoadKeyFile(tc.path)
		var kf *KeyFileError
		if !errors.As(err, &kf) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("%s: %v, want a KeyFileError naming %s and %q", name, err, tc.path, tc.reason)
		}
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(link); err == nil {
		t.Error("a symlinked key file must be refused")
	}
}

func TestWrapAndRotate(t *testing.T) {
	dir := t.TempDir()
	k1, err := CreateKeyFile(filepath.Join(dir, "env.key"))
	if err != nil {
		t.Fatal(err)
	}
	dk, _ := NewDataKey()
	w1 := k1.Wrap(dk)
	if bytes.Contains(w1, dk) {
		t.Fatal("wrapped key contains the key")
	}
	k2, _ := NewKEK(k1.Path())
	if _, err := k2.Unwrap(w1); err == nil || !strings.Contains(err.Error(), k1.Path()) {
		t.Fatalf("wrong KEK: %v", err)
	}
	w2 := k2.Wrap(dk)
	if err := ReplaceKeyFile(k2); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadKeyFile(k1.Path())
	if err != nil || loaded.ID() != k2.ID() {
		t.Fatalf("after replace: %v", err)
	}
	got, err := loaded.Unwrap(w2)
	if err != nil || !bytes.Equal(got, dk) {
		t.Fatalf("unwrap after rotation: %v", err)
	}
	if st, _ := os.Stat(k1.Path()); st.Mode().Perm() != 0o600 {
		t.Fatalf("replaced file mode %v", st.Mode())
	}
}
