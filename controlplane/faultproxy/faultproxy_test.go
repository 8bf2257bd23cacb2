package faultproxy

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func query(sql string) []byte {
	b := []byte{'Q', 0, 0, 0, 0}
	b = append(b, sql...)
	b = append(b, 0)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

func parse(name, sql string) []byte {
	b := []byte{'P', 0, 0, 0, 0}
	b = append(b, name...)
	b = append(b, 0)
	b = append(b, sql...)
	b = append(b, 0, 0, 0)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

func TestIsCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		msg  []byte
		want bool
	}{
		{query("commit"), true},
		{query("COMMIT;"), true},
		{query("  Commit Work ; "), true},
		{query("end"), true},
		{parse("", "commit"), true},
		{parse("stmt_1", "COMMIT TRANSACTION"), true},
		{query("rollback"), false},
		{query("commit prepared 'x'"), false},
		{query("select 'commit'"), false},
		{parse("commit", "select 1"), false},
		{[]byte{'S', 0, 0, 0, 4}, false},
	} {
		if got := isCommit(tc.msg); got != tc.want {
			t.Errorf("isCommit(%q) = %v, want %v", tc.msg, got, tc.want)
		}
	}
}

// bind builds a Bind message for portal and statement (no parameters,
// formats or result formats).
func bind(portal, stmt string) []byte {
	b := []byte{'B', 0, 0, 0, 0}
	b = append(b, portal...)
	b = append(b, 0)
	b = append(b, stmt...)
	b = append(b, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[1:], uint32(len(b)-1))
	return b
}

// TestCommitTracker: a prepared COMMIT runs when it is bound (pgx's
// statement cache binds it again and again after one Parse), not when it is
// parsed; re-preparing a name as something else forgets it.
func TestCommitTracker(t *testing.T) {
	t.Parallel()
	var tr commitTracker
	steps := []struct {
		msg  []byte
		want bool
	}{
		{parse("stmtcache_1", "COMMIT"), false},
		{bind("", "stmtcache_1"), true},
		{bind("", "stmtcache_1"), true},
		{bind("", "stmtcache_2"), false},
		{parse("", "commit"), false},
		{bind("", ""), true},
		{parse("", "select 1"), false},
		{bind("", ""), false},
		{parse("stmtcache_1", "select 2"), false},
		{bind("", "stmtcache_1"), false},
		{query("commit"), true},
		{[]byte{'B', 0, 0, 0, 4}, false},
	}
	for i, st := range steps {
		if got := tr.runsCommit(st.msg); got != st.want {
			t.Errorf("step %d %q: runsCommit = %v, want %v", i, st.msg, got, st.want)
		}
	}
}

// FuzzMessages: the frontend-message reader and the COMMIT recogniser never
// panic, never read past a message, and agree with the length prefix.
func FuzzMessages(f *testing.F) {
	f.Add(query("commit"))
	f.Add(parse("s", "COMMIT"))
	f.Add([]byte{'Q', 0, 0, 0, 4})
	f.Add([]byte{'Q', 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		msg, err := readTyped(bytes.NewReader(data))
		if err != nil {
			return
		}
		if n := binary.BigEndian.Uint32(msg[1:5]); int(n)+1 != len(msg) || !bytes.Equal(msg, data[:len(msg)]) {
			t.Fatalf("message %q does not match its length prefix", msg)
		}
		_ = isCommit(msg)
		var tr commitTracker
		_ = tr.runsCommit(msg)
	})
}

func TestRelayAndCommitResponseLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	c := db.Cluster
	p, err := Start(fmt.Sprintf("127.0.0.1:%d", c.Port()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dsn := fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable", p.Port(), pgtest.Superuser, c.Password(), db.Name)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE public.t (v int)"); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO public.t VALUES ($1)", 1); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("unarmed commit: %v", err)
	}
	p.ArmCommitLoss()
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO public.t VALUES ($1)", 2); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("armed commit returned no error")
	}
	<-p.Fired()
	direct := db.Conn(t)
	var n int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM public.t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("%d rows committed, want 2 (the lost-response commit happened)", n)
	}
	if p.Commits() != 2 {
		t.Fatalf("%d commits seen", p.Commits())
	}
}
