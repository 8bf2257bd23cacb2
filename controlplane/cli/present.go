package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ql3/ql3/core/errs"
)

// How client commands print (#27): text by default — a table for a list, a
// block of "key  value" lines for one object, one line saying what happened
// for a mutation — and the API's JSON answer with --json, for scripts. The
// text printers read the answer's wire fields into the small views of
// present_views.go, so they depend on the API's JSON, not on server types.

// ErrRunSkipped is what `run now` returns when the task's concurrency
// policy did not start the Run (forbid with another Run active): the result
// line is printed and main exits ExitRunSkipped.
var ErrRunSkipped = errors.New("run skipped by the task's concurrency policy")

// output prints a successful answer: its JSON with --json (or when the
// command has no text form), else the command's text; then the command's
// outcome check decides the exit status.
func (c *Client) output(data []byte) error {
	var err error
	switch {
	case c.Args.JSON || c.Print == nil:
		err = writeJSONAnswer(c.Stdout, data)
	default:
		err = c.Print(c.Stdout, c.Args, data)
	}
	if err != nil {
		return err
	}
	if c.Outcome != nil {
		return c.Outcome(data)
	}
	return nil
}

// OutputValue prints a value the command read itself (not through the
// admin API) as output prints an answer.
func (c *Client) OutputValue(v any) error {
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return c.output(data.Bytes())
}

// writeJSONAnswer prints the answer indented; an empty answer (204) prints
// nothing.
func writeJSONAnswer(w io.Writer, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, data, "", "  "); err != nil {
		_, err = w.Write(data)
		return err
	}
	_, err := w.Write(pretty.Bytes())
	return err
}

// decode reads an answer into v, naming the command on failure.
func decode(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return errs.E(errs.Internal, "", "the admin API's answer does not decode: %v", err)
	}
	return nil
}

// table is a tab-aligned table with a header row, as ql3-edge prints its
// lists (text/tabwriter, two spaces between columns).
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if c == "" {
			cells[i] = "-"
		}
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// end flushes the table and, when the page was full, says how to get the
// next one.
func (t *table) end(w io.Writer, nextCursor string) error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	if nextCursor != "" {
		_, err := fmt.Fprintf(w, "more: --cursor %s\n", nextCursor)
		return err
	}
	return nil
}

// fields prints "key  value" lines aligned, skipping empty values.
type fields struct {
	tw *tabwriter.Writer
}

func newFields(w io.Writer) *fields {
	return &fields{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

func (f *fields) add(key, value string) {
	if value != "" {
		fmt.Fprintf(f.tw, "%s\t%s\n", key, value)
	}
}

func (f *fields) end() error { return f.tw.Flush() }

// fmtTime renders epoch ms in the local zone; 0 is "".
func fmtTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02 15:04:05 MST")
}

func fmtExit(code *int) string {
	if code == nil {
		return ""
	}
	return fmt.Sprint(*code)
}

func fmtBool(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// named renders "name (id)", or the id alone.
func named(name, id string) string {
	if name == "" || name == id {
		return id
	}
	return name + " (" + id + ")"
}

// oneLine shortens s to n runes on one line.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
