package subfetch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/subdef"
)

// Source is what a pull fetches: the subscription's kind, URL, branch and
// proxy, and the credential's value (read from the env store entry the
// subscription names; never logged).
type Source struct {
	Kind           string
	URL            string
	Branch         string
	Proxy          string
	CredentialKind string
	Credential     string
}

// Stager stages subscriptions under WorkDir/<slug>/ (a git cache and the
// stages; on the scripts folder's file system, so the swap is a rename).
type Stager struct {
	WorkDir string
	Git     string // the git program; "" = "git" on the PATH
	Limits  Limits
	Log     io.Writer // progress lines (the pull Run's log); nil = none
}

func (s *Stager) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

// Stage fetches src and writes its checked tree into a fresh stage
// folder named prefix-*; the caller swaps it in or discards it. A killed
// or failed stage leaves the tree in place untouched (it is never
// written here), only a stage folder that the next pull removes.
func (s *Stager) Stage(ctx context.Context, slug, prefix string, src Source) (Staged, error) {
	dir := filepath.Join(s.WorkDir, slug)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Staged{}, err
	}
	stage, err := os.MkdirTemp(dir, prefix+"-")
	if err != nil {
		return Staged{}, err
	}
	st := Staged{Dir: stage}
	switch src.Kind {
	case subdef.Git:
		err = s.stageGit(ctx, dir, prefix, src, &st)
	case subdef.File:
		err = s.stageFile(ctx, src, &st)
	default:
		err = errs.Invalidf("kind", "unknown subscription kind %q", src.Kind)
	}
	if err != nil {
		os.RemoveAll(stage)
		return Staged{}, err
	}
	for _, k := range st.Skipped {
		s.logf("skipped %s: %s", k.Path, k.Reason)
	}
	s.logf("staged %d files, %d bytes, %d skipped", st.Files, st.Bytes, len(st.Skipped))
	return st, nil
}

// RemoveStale removes stage folders named prefix-* a killed pull left.
func RemoveStale(workDir, slug, prefix string) {
	ms, _ := filepath.Glob(filepath.Join(workDir, slug, prefix+"-*"))
	for _, m := range ms {
		os.RemoveAll(m)
	}
}

// git runs the git program in the cache without the user's or the
// system's configuration, never prompting, with the credential and the
// proxy passed through the environment (never the command line).
func (s *Stager) git(ctx context.Context, cache string, src Source, stdin io.Reader, stdout io.Writer, args ...string) error {
	prog := s.Git
	if prog == "" {
		prog = "git"
	}
	cmd := exec.CommandContext(ctx, prog, append([]string{"-C", cache}, args...)...)
	cfg := [][2]string{{"protocol.ext.allow", "never"}, {"core.askPass", ""}, {"credential.interactive", "false"}}
	env := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"HOME=" + cache, "PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	if src.Proxy != "" {
		cfg = append(cfg, [2]string{"http.proxy", src.Proxy})
	}
	switch src.CredentialKind {
	case subdef.Token:
		env = append(env, "QL3_GIT_TOKEN="+src.Credential)
		cfg = append(cfg, [2]string{"credential.helper",
			`!f() { test "$1" = get && printf 'username=x-access-token\npassword=%s\n' "$QL3_GIT_TOKEN"; }; f`})
	case subdef.SSHKey:
		key := filepath.Join(cache, "ssh-key")
		if err := os.WriteFile(key, []byte(strings.TrimSpace(src.Credential)+"\n"), 0o600); err != nil {
			return err
		}
		defer os.Remove(key)
		env = append(env, "GIT_SSH_COMMAND=ssh -i '"+key+"' -o IdentitiesOnly=yes -o BatchMode=yes"+
			" -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile='"+filepath.Join(cache, "known_hosts")+"'")
	}
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	cmd.Env = env
	cmd.Stdin, cmd.Stdout = stdin, stdout
	var stderr bytes.Buffer
	cmd.Stderr = &headBuffer{b: &stderr, n: 4096}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if src.Credential != "" {
			msg = strings.ReplaceAll(msg, src.Credential, "***")
		}
		return fmt.Errorf("git %s: %v: %s", args[0], err, msg)
	}
	return nil
}

func (s *Stager) stageGit(ctx context.Context, dir, prefix string, src Source, st *Staged) error {
	cache := filepath.Join(dir, "cache.git")
	if _, err := os.Stat(filepath.Join(cache, "HEAD")); err != nil {
		if err := os.MkdirAll(cache, 0o700); err != nil {
			return err
		}
		if err := s.git(ctx, cache, src, nil, nil, "init", "--quiet", "--bare"); err != nil {
			return err
		}
	}
	from := "HEAD"
	if src.Branch != "" {
		from = "refs/heads/" + src.Branch
	}
	ref := "refs/ql3/" + prefix
	s.logf("fetching %s %s", src.URL, from)
	// A forced, shallow fetch of one ref: a force-push or a rewritten
	// history is just another commit to take.
	if err := s.git(ctx, cache, src, nil, nil, "fetch", "--quiet", "--no-tags", "--depth=1", "--force",
		"--", src.URL, "+"+from+":"+ref); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := s.git(ctx, cache, src, nil, &out, "rev-parse", "--verify", ref+"^{commit}"); err != nil {
		return err
	}
	st.Commit = strings.TrimSpace(out.String())
	s.logf("commit %s", st.Commit)
	out.Reset()
	if err := s.git(ctx, cache, src, nil, &limitedBuffer{b: &out, n: 64 << 20}, "ls-tree", "-r", "-z", "-l", "--full-tree", st.Commit); err != nil {
		return err
	}
	raw, err := parseLsTree(out.Bytes())
	if err != nil {
		return err
	}
	keep, skip, err := checkEntries(raw, s.Limits.WithDefaults())
	if err != nil {
		return err
	}
	st.Skipped = skip
	return s.writeBlobs(ctx, cache, src, st, keep)
}

// parseLsTree reads `git ls-tree -r -z -l`: "mode type id size\tpath\0".
func parseLsTree(b []byte) ([]rawEntry, error) {
	var out []rawEntry
	for _, rec := range bytes.Split(b, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("git ls-tree: unexpected line %.100q", rec)
		}
		e := rawEntry{path: string(path), ref: f[2], kind: kindOther}
		switch {
		case f[0] == "120000":
			e.kind = kindLink
		case f[1] == "commit":
			e.kind = kindSubmodule
		case f[1] == "blob" && strings.HasPrefix(f[0], "100"):
			e.kind, e.exec = kindFile, f[0] == "100755"
			n, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("git ls-tree: size %q", f[3])
			}
			e.size = n
		}
		out = append(out, e)
	}
	return out, nil
}

// writeBlobs streams the kept files out of `git cat-file --batch`.
func (s *Stager) writeBlobs(ctx context.Context, cache string, src Source, st *Staged, keep []entry) error {
	if len(keep) == 0 {
		return nil
	}
	var ids bytes.Buffer
	for _, e := range keep {
		ids.WriteString(e.ref + "\n")
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := s.git(ctx, cache, src, &ids, pw, "cat-file", "--batch")
		pw.CloseWithError(err)
		done <- err
	}()
	br := bufio.NewReader(pr)
	var werr error
	for _, e := range keep {
		head, err := br.ReadString('\n')
		if err != nil {
			werr = fmt.Errorf("reading %s: %w", e.path, err)
			break
		}
		f := strings.Fields(head)
		if len(f) != 3 || f[0] != e.ref || f[1] != "blob" || f[2] != strconv.FormatInt(e.size, 10) {
			werr = fmt.Errorf("reading %s: unexpected object header %.100q", e.path, head)
			break
		}
		if err := writeFile(st.Dir, e, br); err != nil {
			werr = err
			break
		}
		if _, err := br.Discard(1); err != nil { // the newline after the content
			werr = err
			break
		}
		st.Files++
		st.Bytes += e.size
	}
	pr.CloseWithError(errors.New("stopped reading"))
	gerr := <-done
	if werr != nil {
		return werr
	}
	return gerr
}

// limitedBuffer keeps the first n bytes and fails beyond them.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.n {
		return 0, errs.TooLargef("tree", "git's answer is over %d bytes", l.n)
	}
	return l.b.Write(p)
}

// headBuffer keeps the first n bytes and drops the rest without failing.
type headBuffer struct {
	b *bytes.Buffer
	n int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.n - h.b.Len(); room > 0 {
		h.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
