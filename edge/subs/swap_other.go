//go:build !linux

package subs

import (
	"errors"
	"os"
)

func renameNoReplace(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return os.ErrExist
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Rename(from, to)
}

// exchange swaps two folders in three renames (no renameat2 here): for a
// moment the target is missing, never half-written.
func exchange(a, b string) error {
	tmp := a + ".swap"
	if err := os.Rename(b, tmp); err != nil {
		return err
	}
	if err := os.Rename(a, b); err != nil {
		os.Rename(tmp, b)
		return err
	}
	return os.Rename(tmp, a)
}
