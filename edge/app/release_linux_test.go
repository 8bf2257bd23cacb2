//go:build linux

package app

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFileKB reads this process's resident file-backed memory.
func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestDropExecutablePages: the trim unmaps resident pages of this test
// binary's code and read-only data, and the process goes on running (the
// pages come back on use).
func TestDropExecutablePages(t *testing.T) {
	before := rssFileKB(t)
	if err := releaseIdleMemory(); err != nil {
		t.Fatal(err)
	}
	after := rssFileKB(t)
	if after >= before {
		t.Fatalf("RssFile %d kB → %d kB: nothing released", before, after)
	}
	t.Logf("RssFile %d kB → %d kB", before, after)
	// Still alive and able to run code that was paged out.
	if got := strconv.Itoa(42); got != "42" {
		t.Fatal(got)
	}
}
