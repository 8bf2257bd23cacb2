package executor

import (
	"reflect"
	"testing"
)

func TestParseCgroupMounts(t *testing.T) {
	mi := `25 30 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
27 25 0:24 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd
28 25 0:25 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
29 25 0:26 /docker/abc /sys/fs/cgroup/cpu\040cpuacct rw - cgroup cgroup rw,cpu,cpuacct
garbage line`
	got := parseCgroupMounts(mi)
	want := []cgroupMount{
		{Dir: "/sys/fs/cgroup/unified", Root: "/", V2: true},
		{Dir: "/sys/fs/cgroup/systemd", Root: "/"},
		{Dir: "/sys/fs/cgroup/pids", Root: "/", Controllers: []string{"pids"}},
		{Dir: "/sys/fs/cgroup/cpu cpuacct", Root: "/docker/abc", Controllers: []string{"cpu", "cpuacct"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("mounts = %+v\nwant %+v", got, want)
	}
}

func TestParseProcCgroup(t *testing.T) {
	v2, v1 := parseProcCgroup("9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/x\n2:cpu,cpuacct:/\n0::/svc\n")
	if v2 != "/svc" || v1["pids"] != "/a" || v1["memory"] != "/process_api/x" || v1["cpuacct"] != "/" || v1["name=systemd"] != "/" {
		t.Fatalf("v2 %q v1 %v", v2, v1)
	}
	if v2, _ := parseProcCgroup("4:memory:/\n"); v2 != "" {
		t.Fatalf("v1-only host has v2 path %q", v2)
	}
}

func TestCgroupDir(t *testing.T) {
	for _, tc := range []struct {
		m    cgroupMount
		path string
		want string
		ok   bool
	}{
		{cgroupMount{Dir: "/sys/fs/cgroup", Root: "/"}, "/", "/sys/fs/cgroup", true},
		{cgroupMount{Dir: "/sys/fs/cgroup", Root: "/"}, "/system.slice/x.service", "/sys/fs/cgroup/system.slice/x.service", true},
		{cgroupMount{Dir: "/sys/fs/cgroup/memory", Root: "/docker/abc"}, "/docker/abc/sub", "/sys/fs/cgroup/memory/sub", true},
		{cgroupMount{Dir: "/sys/fs/cgroup/memory", Root: "/docker/abc"}, "/docker/abcd", "", false},
	} {
		got, ok := cgroupDir(tc.m, tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("cgroupDir(%+v, %q) = %q, %v", tc.m, tc.path, got, ok)
		}
	}
}

func TestParseKeyedCount(t *testing.T) {
	if n, ok := parseKeyedCount("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill"); !ok || n != 3 {
		t.Fatalf("oom_kill = %d, %v", n, ok)
	}
	if _, ok := parseKeyedCount("low 0\nhigh 0\n", "oom_kill"); ok {
		t.Fatal("missing key found")
	}
}

func TestAttemptGroupName(t *testing.T) {
	name := attemptGroupName(123, 456789, 7)
	pid, start, ok := parseAttemptGroupName(name)
	if !ok || pid != 123 || start != 456789 {
		t.Fatalf("%s → %d %d %v", name, pid, start, ok)
	}
	for _, bad := range []string{"ql3", "o1-2", "o-1-2-3", "ox-1-2", "o1-2-x", "supervisor"} {
		if _, _, ok := parseAttemptGroupName(bad); ok {
			t.Errorf("%q parsed as an attempt group", bad)
		}
	}
}

func FuzzParseCgroupFiles(f *testing.F) {
	f.Add("26 25 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw", "0::/a\n4:memory:/b")
	f.Add(`1 2 3 / /x\ rw - cgroup c rw,pids,=`, "::::\n0::")
	f.Fuzz(func(t *testing.T, mountinfo, proc string) {
		for _, m := range parseCgroupMounts(mountinfo) {
			_, _ = cgroupDir(m, "/a/b")
		}
		_, _ = parseProcCgroup(proc)
		_, _ = parseKeyedCount(proc, "oom_kill")
		_, _, _ = parseAttemptGroupName(proc)
	})
}
