package qlsource

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	_ "modernc.org/sqlite" // the driver

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
)

// MaxRows bounds the rows read from one table.
const MaxRows = 100_000

// Read reads everything the import needs from the QingLong data directory
// dataDir. The source is never written: the database is read from a
// private snapshot, files through read-only descriptors.
func Read(ctx context.Context, dataDir string) (qlimport.Source, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return qlimport.Source{}, errs.Invalidf("from", "%v", err)
	}
	tmp, err := os.MkdirTemp("", "ql3-qlsource-")
	if err != nil {
		return qlimport.Source{}, err
	}
	defer os.RemoveAll(tmp)
	copyPath, err := snapshot(abs, tmp)
	if err != nil {
		return qlimport.Source{}, err
	}
	src, err := readDB(ctx, copyPath)
	if err != nil {
		return qlimport.Source{}, err
	}
	if src.Files, err = Walk(filepath.Join(abs, ScriptsDir)); err != nil {
		return qlimport.Source{}, err
	}
	cfg, err := readConfig(filepath.Join(abs, filepath.FromSlash(ConfigFile)))
	if err != nil {
		return qlimport.Source{}, err
	}
	src.ConfigExports, _ = qlimport.ParseConfigExports(cfg)
	return src, nil
}

func readConfig(p string) (string, error) {
	f, err := openNoFollow(p)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", errs.Invalidf("from", "%s: %v", ConfigFile, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxConfigBytes {
		return "", errs.TooLargef("from", "%s is larger than %d bytes", ConfigFile, MaxConfigBytes)
	}
	return string(b), nil
}

func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// readDB opens the private copy read-only and reads the four tables.
func readDB(ctx context.Context, copyPath string) (qlimport.Source, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+copyPath+"?"+q.Encode())
	if err != nil {
		return qlimport.Source{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return qlimport.Source{}, errs.Invalidf("from", "%s does not open as SQLite: %v", DBFile, err)
	}
	defer tx.Rollback()
	var src qlimport.Source
	if src.Crontabs, err = readCrontabs(ctx, tx); err != nil {
		return src, err
	}
	if src.Envs, err = readEnvs(ctx, tx); err != nil {
		return src, err
	}
	if src.Subscriptions, err = readSubscriptions(ctx, tx); err != nil {
		return src, err
	}
	if src.Dependences, err = readDependences(ctx, tx); err != nil {
		return src, err
	}
	return src, nil
}

// tableExists: a QingLong that never created subscriptions may lack the
// table entirely (older 2.x); Crontabs and Envs are required.
func tableExists(ctx context.Context, tx *sql.Tx, name string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

func query(ctx context.Context, tx *sql.Tx, table string, required bool, q string, scan func(*sql.Rows) error) error {
	ok, err := tableExists(ctx, tx, table)
	if err != nil {
		return errs.Invalidf("from", "%s: %v", DBFile, err)
	}
	if !ok {
		if required {
			return errs.Invalidf("from", "%s has no table %s: not a QingLong 2 database", DBFile, table)
		}
		return nil
	}
	rows, err := tx.QueryContext(ctx, q+` ORDER BY id LIMIT ?`, MaxRows+1)
	if err != nil {
		return errs.Invalidf("from", "reading %s: %v", table, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if n++; n > MaxRows {
			return errs.TooLargef("from", "%s has more than %d rows", table, MaxRows)
		}
		if err := scan(rows); err != nil {
			return errs.Invalidf("from", "reading %s row %d: %v", table, n, err)
		}
	}
	return rows.Err()
}

// text and num read QingLong's loosely typed columns (VARCHAR, NUMBER,
// JSON may hold NULL, text or numbers).
const (
	selCrontabs = `SELECT id, IFNULL(name, ''), IFNULL(command, ''), IFNULL(schedule, ''), IFNULL(extra_schedules, ''),
    IFNULL(isDisabled, 0) + 0, IFNULL(isSystem, 0) + 0, IFNULL(labels, ''), IFNULL(sub_id, 0) + 0,
    IFNULL(task_before, ''), IFNULL(task_after, ''), IFNULL(work_dir, ''), IFNULL(allow_multiple_instances, -1) + 0 FROM Crontabs`
	selEnvs = `SELECT id, IFNULL(name, ''), IFNULL(value, ''), IFNULL(remarks, ''), IFNULL(status, 0) + 0,
    IFNULL(position, 0) + 0.0, IFNULL(isPinned, 0) + 0, IFNULL(labels, ''), IFNULL(createdAt, '') FROM Envs`
	selSubscriptions = `SELECT id, IFNULL(name, ''), IFNULL(alias, ''), IFNULL(type, ''), IFNULL(url, ''), IFNULL(branch, ''),
    IFNULL(schedule, ''), IFNULL(schedule_type, ''), IFNULL(whitelist, ''), IFNULL(blacklist, ''), IFNULL(extensions, ''),
    IFNULL(sub_before, ''), IFNULL(sub_after, ''), IFNULL(pull_option, ''), IFNULL(proxy, ''),
    IFNULL(autoAddCron, 0) + 0, IFNULL(autoDelCron, 0) + 0, IFNULL(is_disabled, 0) + 0 FROM Subscriptions`
	selDependences = `SELECT id, IFNULL(name, ''), IFNULL(type, -1) + 0, IFNULL(remark, '') FROM Dependences`
)

func readCrontabs(ctx context.Context, tx *sql.Tx) ([]qlimport.Crontab, error) {
	var out []qlimport.Crontab
	err := query(ctx, tx, "Crontabs", true, selCrontabs, func(r *sql.Rows) error {
		var (
			c                   qlimport.Crontab
			extra, labels       string
			dis, sys, sub, mult int64
		)
		if err := r.Scan(&c.ID, &c.Name, &c.Command, &c.Schedule, &extra, &dis, &sys, &labels, &sub,
			&c.TaskBefore, &c.TaskAfter, &c.WorkDir, &mult); err != nil {
			return err
		}
		// QingLong 2.21's runCron kills a running instance only when the
		// column is 0: 1, and NULL (rows older than the column), run both.
		c.IsDisabled, c.IsSystem, c.SubID, c.AllowMultipleInstances = dis == 1, sys == 1, sub, mult != 0
		var es []struct {
			Schedule string `json:"schedule"`
		}
		if err := jsonField(extra, &es); err != nil {
			return fmt.Errorf("extra_schedules: %w", err)
		}
		for _, e := range es {
			c.ExtraSchedules = append(c.ExtraSchedules, e.Schedule)
		}
		var err error
		c.Labels, err = stringList(labels)
		if err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

func readEnvs(ctx context.Context, tx *sql.Tx) ([]qlimport.Env, error) {
	var out []qlimport.Env
	err := query(ctx, tx, "Envs", true, selEnvs, func(r *sql.Rows) error {
		var (
			e               qlimport.Env
			status, pinned  int64
			labels, created string
		)
		if err := r.Scan(&e.ID, &e.Name, &e.Value, &e.Remarks, &status, &e.Position, &pinned, &labels, &created); err != nil {
			return err
		}
		e.Disabled, e.Pinned = status == 1, pinned == 1
		var err error
		if e.Labels, err = stringList(labels); err != nil {
			return fmt.Errorf("labels: %w", err)
		}
		e.CreatedAtMs = createdMs(created)
		out = append(out, e)
		return nil
	})
	return out, err
}

// createdMs reads Sequelize's SQLite DATETIME text ("2026-01-01
// 00:01:00.000 +00:00"); an unreadable value sorts first (0), as
// QingLong's ORDER BY on text would put it in no reliable place either.
func createdMs(s string) int64 {
	for _, layout := range []string{"2006-01-02 15:04:05.999 -07:00", "2006-01-02 15:04:05.999", time.RFC3339Nano} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli()
		}
	}
	return 0
}

func readSubscriptions(ctx context.Context, tx *sql.Tx) ([]qlimport.Subscription, error) {
	var out []qlimport.Subscription
	err := query(ctx, tx, "Subscriptions", false, selSubscriptions, func(r *sql.Rows) error {
		var (
			s                 qlimport.Subscription
			pullOption        string
			add, del, disable int64
		)
		if err := r.Scan(&s.ID, &s.Name, &s.Alias, &s.Type, &s.URL, &s.Branch, &s.Schedule, &s.ScheduleType,
			&s.Whitelist, &s.Blacklist, &s.Extensions, &s.SubBefore, &s.SubAfter, &pullOption, &s.Proxy,
			&add, &del, &disable); err != nil {
			return err
		}
		s.AutoAddCron, s.AutoDelCron, s.IsDisabled = add == 1, del == 1, disable == 1
		var po map[string]any
		if err := jsonField(pullOption, &po); err != nil {
			return fmt.Errorf("pull_option: %w", err)
		}
		for _, k := range []string{"private_key", "password"} {
			if v, ok := po[k].(string); ok && v != "" {
				s.HasCredential = true
			}
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

func readDependences(ctx context.Context, tx *sql.Tx) ([]qlimport.Dependence, error) {
	var out []qlimport.Dependence
	err := query(ctx, tx, "Dependences", false, selDependences, func(r *sql.Rows) error {
		var (
			d   qlimport.Dependence
			typ int64
		)
		if err := r.Scan(&d.ID, &d.Name, &typ, &d.Remark); err != nil {
			return err
		}
		d.Type = int(typ)
		out = append(out, d)
		return nil
	})
	return out, err
}

// jsonField decodes a JSON column; empty and "null" leave v as it is.
func jsonField(s string, v any) error {
	s = strings.TrimSpace(s)
	if s == "" || s == "null" {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// stringList reads a JSON array of strings (labels).
func stringList(s string) ([]string, error) {
	var l []string
	if err := jsonField(s, &l); err != nil {
		return nil, err
	}
	return l, nil
}
