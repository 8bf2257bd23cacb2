// Package gittest makes git repositories for tests of subscriptions (both
// binaries): ordinary commits through the git program, and tree objects
// git itself would never make (an entry named ".." or ".git"), served by
// file:// URLs — no network.
package gittest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Repo is a git repository made by the test with the git program.
type Repo struct {
	T   testing.TB
	Dir string
}

// New makes an empty repository whose branch is main.
func New(t testing.TB) *Repo {
	t.Helper()
	r := &Repo{T: t, Dir: filepath.Join(t.TempDir(), "origin")}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.Git("init", "--quiet", "--initial-branch=main")
	return r
}

// Git runs git in the repository without the user's configuration and
// returns its trimmed output.
func (r *Repo) Git(args ...string) string {
	r.T.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.Dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.invalid", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		r.T.Fatalf("git %v: %v: %s", args, err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

// Write writes files (path → content) into the work tree.
func (r *Repo) Write(files map[string]string) {
	r.T.Helper()
	for p, c := range files {
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			r.T.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			r.T.Fatal(err)
		}
	}
}

// Commit commits everything in the work tree and returns the commit.
func (r *Repo) Commit(msg string) string {
	r.T.Helper()
	r.Git("add", "-A")
	r.Git("commit", "--quiet", "--allow-empty", "-m", msg)
	return r.Git("rev-parse", "HEAD")
}

// URL is the repository's file:// URL.
func (r *Repo) URL() string { return "file://" + r.Dir }

// LiteralTree writes a tree object git itself would not make (entries of
// mode and name; a "40000" entry is a folder holding one file "passwd",
// every other entry is the blob of README.md) and commits it on main.
func (r *Repo) LiteralTree(entries ...[2]string) {
	r.T.Helper()
	blob := r.Git("hash-object", "-w", "--stdin", "README.md")
	raw, _ := hex.DecodeString(blob)
	var tree bytes.Buffer
	for _, e := range entries {
		mode, name := e[0], e[1]
		id := raw
		if mode == "40000" {
			id, _ = hex.DecodeString(r.LiteralSubtree())
		}
		fmt.Fprintf(&tree, "%s %s\x00", mode, name)
		tree.Write(id)
	}
	c := r.Git("commit-tree", r.hashTree(&tree), "-m", "hostile")
	r.Git("update-ref", "refs/heads/main", c)
}

// LiteralSubtree is a tree holding one file "passwd".
func (r *Repo) LiteralSubtree() string {
	r.T.Helper()
	blob := r.Git("hash-object", "-w", "--stdin", "README.md")
	raw, _ := hex.DecodeString(blob)
	var tree bytes.Buffer
	fmt.Fprintf(&tree, "100644 passwd\x00")
	tree.Write(raw)
	return r.hashTree(&tree)
}

func (r *Repo) hashTree(tree *bytes.Buffer) string {
	r.T.Helper()
	cmd := exec.Command("git", "-C", r.Dir, "hash-object", "-t", "tree", "--literally", "-w", "--stdin")
	cmd.Stdin = tree
	out, err := cmd.Output()
	if err != nil {
		r.T.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
