package subfetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// stageFile fetches one raw file (http, https, or file for a local path)
// into the stage under its URL's base name, bounded by the file limit.
func (s *Stager) stageFile(ctx context.Context, src Source, st *Staged) error {
	u, err := url.Parse(src.URL)
	if err != nil {
		return errs.Invalidf("url", "%v", err)
	}
	name := path.Base(u.Path)
	l := s.Limits.WithDefaults()
	raw := []rawEntry{{path: name, kind: kindFile}}
	var body io.ReadCloser
	s.logf("fetching %s", src.URL)
	switch u.Scheme {
	case "file":
		f, err := os.Open(u.Path)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return errs.Invalidf("url", "%s is not a regular file", u.Path)
		}
		body = f
	default:
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
		if err != nil {
			return err
		}
		if src.CredentialKind != "" {
			req.Header.Set("Authorization", "token "+src.Credential)
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		if src.Proxy != "" {
			p, err := url.Parse(src.Proxy)
			if err != nil {
				return errs.Invalidf("proxy", "%v", err)
			}
			tr.Proxy = http.ProxyURL(p)
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Minute}).Do(req)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("GET %s: %s", src.URL, resp.Status)
		}
		body = resp.Body
	}
	defer body.Close()
	// Read one byte past the limit to know whether the file fits.
	tmp, err := os.CreateTemp(st.Dir, ".download-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, l.MaxFileBytes+1))
	if err != nil {
		tmp.Close()
		return err
	}
	raw[0].size = n
	keep, skip, err := checkEntries(raw, l)
	if err != nil {
		tmp.Close()
		return err
	}
	st.Skipped, st.Commit = skip, "sha256:"+hex.EncodeToString(h.Sum(nil))
	if len(keep) == 0 {
		tmp.Close()
		return errs.TooLargef("url", "the file is over %d bytes", l.MaxFileBytes)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return err
	}
	err = writeFile(st.Dir, keep[0], tmp)
	tmp.Close()
	if err == nil {
		st.Files, st.Bytes = 1, n
	}
	return err
}
