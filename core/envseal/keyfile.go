package envseal

import "fmt"

// MaxKeyFileBytes bounds a key file: one KEK text form and a line break.
const MaxKeyFileBytes = 256

// KeyFileProblem is the one rule both binaries hold a key file to, from
// what a stat of it says (the adapters do the I/O): a regular file (a
// symlink is not followed), not readable or writable by group or others,
// at most MaxKeyFileBytes. It returns "" for a usable file, else the
// reason, to be shown with the file's path.
func KeyFileProblem(regular bool, perm uint32, size int64) string {
	switch {
	case !regular:
		return "is not a regular file"
	case perm&0o077 != 0:
		return fmt.Sprintf("is readable or writable by group or others (mode %04o); run chmod 600 on it", perm&0o7777)
	case size > MaxKeyFileBytes:
		return fmt.Sprintf("is larger than %d bytes; it is not an env key file", MaxKeyFileBytes)
	}
	return ""
}
