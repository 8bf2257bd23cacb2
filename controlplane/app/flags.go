package app

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// settingScope says which commands a shared setting's flag belongs to. The
// config file and the environment carry every setting for every command;
// only the flags (and so each command's help) are scoped.
type settingScope uint8

const (
	forServe    settingScope = 1 << iota // serve
	forMigrate                           // migrate
	forDatabase                          // commands that connect as ql3_admin themselves (token ...)
	forClient                            // HTTP client commands of the admin API
	forAll      = forServe | forMigrate | forDatabase | forClient
)

// settingFlag is the flag.Value of a shared setting: it only records the
// raw text, applied after the config file and the environment so flags win.
// Booleans are bare flags (--no-scheduler; --no-scheduler=false also works).
type settingFlag struct {
	raw map[string]string
	s   setting
	def string
}

func (f *settingFlag) String() string {
	if f == nil {
		return ""
	}
	return f.def
}

// Set records v; it is parsed (and refused, naming the flag) once the
// lower layers are applied.
func (f *settingFlag) Set(v string) error {
	f.raw[f.s.flag] = v
	return nil
}

func (f *settingFlag) IsBoolFlag() bool { return f.s.boolean != nil }

// kind names the value a setting's flag takes, for help.
func (s setting) kind() string {
	switch {
	case s.boolean != nil:
		return ""
	case s.integer != nil:
		return "int"
	default:
		return "string"
	}
}

// current is the setting's present value as text ("" for a zero value).
func (s setting) current() string {
	switch {
	case s.str != nil:
		return strconv.Quote(*s.str)
	case s.boolean != nil && *s.boolean:
		return "true"
	case s.integer != nil && *s.integer != 0:
		return strconv.FormatInt(*s.integer, 10)
	}
	return ""
}

// registerSettings adds the flags of the shared settings in scope to fs;
// their values land in raw.
func registerSettings(fs *flag.FlagSet, cfg *Config, scope settingScope, raw map[string]string) {
	for _, s := range cfg.settings() {
		if s.scope&scope == 0 {
			continue
		}
		def := s.current()
		if def == `""` {
			def = ""
		}
		fs.Var(&settingFlag{raw: raw, s: s, def: def}, s.flag, s.usage)
	}
}

// printUsage writes one command's help: its summary and only its flags,
// each with -- and its default.
func printUsage(w io.Writer, fs *flag.FlagSet, name string, c command) {
	fmt.Fprintf(w, "usage: ql3-control %s [flags]\n  %s\n", name, c.summary)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		def, env := f.DefValue, ""
		if sf, ok := f.Value.(*settingFlag); ok {
			kind, env = sf.s.kind(), sf.s.env()
		} else if f.Name == "config" {
			env = "QL3_CONFIG"
		} else if kind == "value" {
			kind = "string"
		}
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintln(w, line)
		var notes []string
		if def != "" && def != "0" && def != "0s" && def != "false" {
			if kind == "string" && !strings.HasPrefix(def, `"`) {
				def = strconv.Quote(def)
			}
			notes = append(notes, "default "+def)
		}
		if env != "" {
			notes = append(notes, "env "+env)
		}
		if len(notes) > 0 {
			usage += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(w, "        %s\n", usage)
	})
}

// doubleDash rewrites the flag package's "-name" in its parse errors to the
// "--name" that help and the README use.
func doubleDash(err error) string {
	return strings.NewReplacer(": -", ": --", "for -", "for --", "for flag -", "for flag --").Replace(err.Error())
}
