package find

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
)

// Limits of labels and saved views (ADR 0050; the same on both binaries).
const (
	MaxTaskLabels = 16  // labels per task
	MaxLabelChars = 32  // characters per label
	MaxViews      = 100 // saved views (per project on the control plane)
)

// CheckLabels validates a task's labels and returns them normalized (NFC)
// in the given order: at most MaxTaskLabels, each a readable name
// (names.CheckDisplay) of 1..MaxLabelChars characters without a comma
// (the panel and the CLI write labels comma-separated), no duplicates.
func CheckLabels(labels []string) ([]string, error) {
	if len(labels) > MaxTaskLabels {
		return nil, errs.Invalidf("labels", "a task has at most %d labels, got %d", MaxTaskLabels, len(labels))
	}
	out := make([]string, 0, len(labels))
	for i, l := range labels {
		field := "labels[" + strconv.Itoa(i) + "]"
		n, err := names.CheckDisplay(field, strings.TrimSpace(l))
		if err != nil {
			return nil, err
		}
		if c := utf8.RuneCountInString(n); c > MaxLabelChars {
			return nil, errs.Invalidf(field, "must be 1..%d characters, got %d", MaxLabelChars, c)
		}
		if strings.Contains(n, ",") {
			return nil, errs.Invalidf(field, "must not contain a comma")
		}
		if slices.Contains(out, n) {
			return nil, errs.Invalidf(field, "label %q appears twice", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// CheckLabel checks one label of a filter (field names the error).
func CheckLabel(field, label string) (string, error) {
	ls, err := CheckLabels([]string{label})
	var e *errs.Error
	if errors.As(err, &e) {
		return "", errs.Invalidf(field, "%s", e.Message)
	}
	if err != nil {
		return "", err
	}
	return ls[0], nil
}

// ViewFilter is what a saved view selects: the task list's search, label
// and enabled filters ("" for each: no filter).
type ViewFilter struct {
	Search  string
	Label   string
	Enabled string // "", "true" or "false"
}

// CheckView validates a view to save and returns it normalized.
func CheckView(name string, f ViewFilter) (string, ViewFilter, error) {
	n, err := names.CheckDisplay("name", name)
	if err != nil {
		return "", ViewFilter{}, err
	}
	if _, err := CheckSearch("filter.search", f.Search); err != nil {
		return "", ViewFilter{}, err
	}
	f.Search = strings.TrimSpace(f.Search)
	if f.Label != "" {
		if f.Label, err = CheckLabel("filter.label", f.Label); err != nil {
			return "", ViewFilter{}, err
		}
	}
	switch f.Enabled {
	case "", "true", "false":
	default:
		return "", ViewFilter{}, errs.Invalidf("filter.enabled", `must be "", "true" or "false", got %.16q`, f.Enabled)
	}
	return n, f, nil
}
