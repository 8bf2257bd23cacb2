package publication

import "github.com/ql3/ql3/core/spec"

// CompileSpecForTest exposes the publish-time spec check to the external tests.
func CompileSpecForTest(c spec.Command) error {
	_, err := compileSpec(c)
	return err
}
