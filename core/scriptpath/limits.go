package scriptpath

import "github.com/ql3/ql3/core/errs"

// CheckLimits refuses a change that would take a folder holding entries
// files and folders and bytes bytes past MaxEntries or MaxTotalBytes
// (a change that shrinks is always allowed).
func CheckLimits(entries int, bytes int64, addEntries int, addBytes int64) error {
	if n := entries + addEntries; addEntries > 0 && n > MaxEntries {
		return errs.Invalidf("path", "the scripts folder would hold %d files and folders, limit is %d", n, MaxEntries)
	}
	if b := bytes + addBytes; addBytes > 0 && b > MaxTotalBytes {
		return errs.TooLargef("path", "the scripts folder would hold %d bytes, limit is %d (512 MiB) in all", b, int64(MaxTotalBytes))
	}
	return nil
}
