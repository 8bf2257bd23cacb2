package cli

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/core/errs"
)

func credentialFileFlag(fs *flag.FlagSet, a *Args) {
	fs.StringVar(&a.credentialFile, "credential-file", "",
		"write the new credential to this file (0600; its directory must not be group/world-accessible) instead of printing it")
}

// callCredential posts a credential issue or rotation. With
// --credential-file the credential text goes to that file only (0600,
// written atomically) and the printed answer (text, or with --json every
// other field) never holds it, so provisioning scripts never pass the
// secret through a terminal or a pipe.
func (c *Client) callCredential(ctx context.Context, path string, body any) error {
	file := c.Args.credentialFile
	if file == "" {
		return c.call(ctx, http.MethodPost, path, body)
	}
	dir := filepath.Dir(file)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return errs.Invalidf("credential-file", "its directory does not exist")
	}
	if st.Mode().Perm()&0o077 != 0 {
		return errs.Invalidf("credential-file", "its directory is accessible by group or others (mode %#o); use 0700", st.Mode().Perm())
	}
	data, err := c.fetch(ctx, http.MethodPost, path, body)
	if err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return errs.E(errs.Internal, "", "admin API answered a credential that is not a JSON object")
	}
	var text string
	if raw, ok := fields["credential"]; !ok || json.Unmarshal(raw, &text) != nil || text == "" {
		return errs.E(errs.Internal, "", "admin API answered without a credential")
	}
	if err := devpki.WriteFileAtomic(file, []byte(text+"\n"), 0o600); err != nil {
		return errs.Invalidf("credential-file", "cannot write it: %v", err)
	}
	delete(fields, "credential")
	rest, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	return c.output(rest)
}
