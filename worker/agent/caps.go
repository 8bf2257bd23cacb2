package agent

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/placement"
)

// ProbeTimeout bounds each runtime probe (python3 --version takes about a
// second on a router).
const ProbeTimeout = 5 * time.Second

// runtimeProbes are the runtimes reported with their versions, each under
// every name a placement may use.
var runtimeProbes = []struct {
	names []string
	argv  []string
}{
	{[]string{"python", "python3"}, []string{"python3", "--version"}},
	{[]string{"node"}, []string{"node", "--version"}},
	{[]string{"bash"}, []string{"bash", "--version"}},
}

// ProbeCapabilities describes this machine once at start: os/arch, the
// executors, the runtimes found on PATH with versions normalised to
// semver, the memory, and the operator's labels.
func ProbeCapabilities(ctx context.Context, labels map[string]string) placement.Capabilities {
	c := placement.Capabilities{
		OS: runtime.GOOS, Arch: runtime.GOARCH,
		Executors: []string{"argv", "shell"},
		Labels:    labels,
		MemoryMiB: memoryMiB(),
	}
	for _, p := range runtimeProbes {
		v := probeVersion(ctx, p.argv)
		if v == "" {
			continue
		}
		if c.Runtimes == nil {
			c.Runtimes = map[string]string{}
		}
		for _, n := range p.names {
			c.Runtimes[n] = v
		}
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		c.Features = append(c.Features, "bash")
	}
	return c
}

func probeVersion(ctx context.Context, argv []string) string {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if err != nil || len(out) > 64<<10 {
		return ""
	}
	return NormalizeVersion(string(out))
}

// NormalizeVersion finds the first version number in a --version text and
// returns it as semver MAJOR.MINOR.PATCH ("Python 3.11.2" → "3.11.2",
// "v20.11.0" → "20.11.0", "GNU bash, version 5.2.15(1)-release" →
// "5.2.15", "3.12" → "3.12.0"). It returns "" when no number is found. It
// is a tiny stdlib parser on purpose: the worker does not link a semver
// library (the authority's matcher parses the result).
func NormalizeVersion(text string) string {
	if len(text) > 4096 {
		text = text[:4096]
	}
	s := text
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			continue
		}
		if i > 0 && (isAlnum(s[i-1]) && s[i-1] != 'v' && s[i-1] != 'V') {
			continue // part of a word such as "x86_64" or "md5"
		}
		var parts []string
		j := i
		for len(parts) < 3 {
			k := j
			for k < len(s) && s[k] >= '0' && s[k] <= '9' {
				k++
			}
			if k == j || k-j > 9 {
				break
			}
			parts = append(parts, trimZeros(s[j:k]))
			if k < len(s) && s[k] == '.' && k+1 < len(s) && s[k+1] >= '0' && s[k+1] <= '9' {
				j = k + 1
				continue
			}
			break
		}
		if len(parts) < 2 {
			continue // a lone number ("(1)") is not a version
		}
		for len(parts) < 3 {
			parts = append(parts, "0")
		}
		return strings.Join(parts, ".")
	}
	return ""
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func trimZeros(s string) string {
	s = strings.TrimLeft(s, "0")
	if s == "" {
		return "0"
	}
	return s
}

// memoryMiB reads MemTotal from /proc/meminfo (0 when unknown).
func memoryMiB() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil && kb > 0 {
				return kb / 1024
			}
		}
	}
	return 0
}
