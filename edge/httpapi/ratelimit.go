package httpapi

import (
	"time"

	"github.com/ql3/ql3/httpkit"
)

// failLimiter counts failed credential checks per peer address
// (httpkit.FailLimiter, shared with the control plane's Open API).
type failLimiter = httpkit.FailLimiter

func newFailLimiter(max int, window time.Duration) *failLimiter {
	return httpkit.NewFailLimiter(max, window)
}
