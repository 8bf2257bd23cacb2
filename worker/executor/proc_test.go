package executor

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	tail := " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52"
	tests := []struct {
		name string
		in   string
		want procStat
		ok   bool
	}{
		{"plain", "1234 (sleep) S 1 1234 1234 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 98765 8192 200", procStat{'S', 1, 1234, 98765}, true},
		{"spaces and parens in comm", "77 (a b) (c)) R 5 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0", procStat{'R', 5, 70, 42}, true},
		{"zombie", "9 (x) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0", procStat{'Z', 1, 9, 7}, true},
		{"long tail", "9 (x) S" + tail, procStat{'S', 1, 2, 19}, true},
		{"no comm", "9 x S 1 9 9", procStat{}, false},
		{"too short", "9 (x) S 1 9 9 0", procStat{}, false},
		{"bad start", "9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -7 0 0", procStat{}, false},
		{"bad state", "9 (x) SS 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0", procStat{}, false},
		{"reversed parens", "9 )x( S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7 0 0", procStat{}, false},
		{"empty", "", procStat{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseProcStat([]byte(tc.in))
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("parseProcStat = %+v, %v; want %+v ok=%v", got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestEnvironHasMarker(t *testing.T) {
	tests := []struct {
		env     string
		run     string
		attempt int
		want    bool
	}{
		{"PATH=/bin\x00QL3_RUN_ID=r1\x00QL3_ATTEMPT=2\x00", "r1", 2, true},
		{"QL3_ATTEMPT=2\x00QL3_RUN_ID=r1", "r1", 2, true},
		{"QL3_RUN_ID=r1\x00QL3_ATTEMPT=2", "r1", 3, false},
		{"QL3_RUN_ID=r10\x00QL3_ATTEMPT=2", "r1", 2, false},
		{"QL3_RUN_ID=r1\x00QL3_ATTEMPT=22", "r1", 2, false},
		{"XQL3_RUN_ID=r1\x00QL3_ATTEMPT=2", "r1", 2, false},
		{"QL3_RUN_ID=\x00QL3_ATTEMPT=2", "", 2, false},
		{"", "r1", 1, false},
	}
	for _, tc := range tests {
		if got := environHasMarker([]byte(tc.env), tc.run, tc.attempt); got != tc.want {
			t.Errorf("environHasMarker(%q, %q, %d) = %v, want %v", tc.env, tc.run, tc.attempt, got, tc.want)
		}
	}
}

func TestParseIdentity(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"12:12:345:6f1c-boot", true},
		{"12:10:0:", true},
		{"12:12:345", false},
		{"0:12:345:b", false},
		{"12:-1:345:b", false},
		{"12:12:x:b", false},
		{"12:12:1:a:b", false},
		{"12:12:1:" + strings.Repeat("b", 65), false},
	} {
		id, err := ParseIdentity(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseIdentity(%q) = %+v, %v; want ok=%v", tc.in, id, err, tc.ok)
		}
		if err == nil && id.String() != tc.in {
			t.Errorf("round trip %q → %q", tc.in, id.String())
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("1234 (sleep) S 1 1234 1234 0 -1 4194560 99 0 0 0 0 0 0 0 20 0 1 0 98765 8192 200"))
	f.Add([]byte("77 (a b) (c)) R 5 70 70 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0"))
	f.Add([]byte("9 (x\n) Z"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := parseProcStat(data)
		if err != nil {
			return
		}
		if !(st.State >= 'A' && st.State <= 'Z' || st.State >= 'a' && st.State <= 'z') {
			t.Fatalf("accepted state %q from %q", st.State, data)
		}
	})
}

func FuzzEnvironHasMarker(f *testing.F) {
	f.Add([]byte("PATH=/bin\x00QL3_RUN_ID=r1\x00QL3_ATTEMPT=2\x00"), "r1", 2)
	f.Add([]byte("QL3_RUN_ID=r1"), "r1", 1)
	f.Fuzz(func(t *testing.T, env []byte, runID string, attempt int) {
		got := environHasMarker(env, runID, attempt)
		// Reference: split on NUL and compare whole entries.
		var haveRun, haveAttempt bool
		for _, kv := range strings.Split(string(env), "\x00") {
			haveRun = haveRun || kv == "QL3_RUN_ID="+runID
			haveAttempt = haveAttempt || kv == "QL3_ATTEMPT="+itoa(attempt)
		}
		if want := runID != "" && haveRun && haveAttempt; got != want {
			t.Fatalf("environHasMarker(%q, %q, %d) = %v, reference %v", env, runID, attempt, got, want)
		}
	})
}

func FuzzParseIdentity(f *testing.F) {
	f.Add("12:12:345:6f1c-boot")
	f.Add("1:1:0:")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseIdentity(s)
		if err != nil {
			return
		}
		back, err := ParseIdentity(id.String())
		if err != nil || back != id {
			t.Fatalf("re-parse of %q: %+v, %v (first %+v)", id.String(), back, err, id)
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
