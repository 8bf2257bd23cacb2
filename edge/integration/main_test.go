//go:build linux

package integration

import (
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if ql3-edge (scheduler, runner, executor,
// HTTP server) leaves goroutines behind after Close.
func TestMain(m *testing.M) {
	code := m.Run()
	http.DefaultClient.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	if binTmpDir != "" {
		os.RemoveAll(binTmpDir)
	}
	os.Exit(code)
}
