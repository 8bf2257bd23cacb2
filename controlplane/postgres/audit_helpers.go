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
