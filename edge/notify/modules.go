package notify

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The sendNotify modules for scripts: QingLong's call shapes, posting to
// QL3_NOTIFY_URL with the Run's token.
//
//go:embed modules/sendNotify.js modules/notify.py
var modules embed.FS

// ModuleFiles are the shipped modules' names in the scripts folder.
var ModuleFiles = []string{"sendNotify.js", "notify.py"}

// WriteModules writes the modules into dir (the scripts folder, created
// 0755 if needed) where they are absent: a file already there, the user's
// own or an edited copy, is left as it is.
func WriteModules(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("scripts folder %s: %w", dir, err)
	}
	for _, name := range ModuleFiles {
		body, err := fs.ReadFile(modules, "modules/"+name)
		if err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		_, werr := f.Write(body)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
