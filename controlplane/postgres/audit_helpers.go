package postgres

import "net"

// NullIfEmpty maps "" to SQL NULL (the audit columns are 1..n bytes or NULL).
func NullIfEmpty(s string, max int) any {
	if s == "" {
		return nil
	}
	return clip(s, max)
}

// PeerIP strips the port of a RemoteAddr; what is left is bounded anyway.
func PeerIP(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Clip bounds s to n bytes for a column (subpackages use it too).
func Clip(s string, n int) string { return clip(s, n) }

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
