// Package cli is ql3-control's admin-client side: the client commands'
// flags, their HTTP calls to a running server's admin API, and how their
// answers print (text, or the API's JSON with --json). It talks HTTP only:
// it links no database package. The app parses the command line and its
// settings, then hands a client command a Client to run.
package cli

import (
	"context"
	"flag"
	"io"
	"time"
)

// DefaultServer is the admin API the client commands call by default.
const DefaultServer = "http://127.0.0.1:5800"

// clientTimeout bounds one admin API request.
const clientTimeout = 15 * time.Second

// maxResponseBytes bounds what a client command reads back.
const maxResponseBytes = 8 << 20

// Command is one client subcommand: its flags, what it does, and how it
// prints its answer.
type Command struct {
	Summary string
	Flags   func(fs *flag.FlagSet, a *Args)
	Run     func(c *Client, ctx context.Context) error
	// Print is the text form of the answer (nil: JSON only); with it the
	// command takes --json. Outcome, when set, decides the error from the
	// answer.
	Print   Printer
	Outcome func(data []byte) error
}

// Commands are the client subcommands by name ("task list", "run now").
func Commands() map[string]Command {
	cmds := clientCommands()
	for name, c := range lifecycleCommands() {
		cmds[name] = c
	}
	for name, c := range envCommands() {
		cmds[name] = c
	}
	for name, c := range scriptCommands() { // scriptcmd.go
		cmds[name] = c
	}
	for name, c := range subCommands() { // subcmd.go
		cmds[name] = c
	}
	for name, c := range notifyCommands() { // notify.go
		cmds[name] = c
	}
	for name, c := range appCommands() {
		cmds[name] = c
	}
	for name, c := range depCommands() { // depcmd.go
		cmds[name] = c
	}
	for name, c := range importCommands() { // importcmd.go
		cmds[name] = c
	}
	printers := Printers()
	for name, p := range subPrinters() { // subcmd.go
		printers[name] = p
	}
	for name, p := range notifyPrinters() {
		printers[name] = p
	}
	for name, p := range depPrinters() {
		printers[name] = p
	}
	for name, p := range importPrinters() {
		printers[name] = p
	}
	for name, c := range cmds {
		c.Print = printers[name]
		if name == "run now" {
			c.Outcome = RunNowOutcome
		}
		cmds[name] = c
	}
	return cmds
}

// Printer renders a successful answer as text.
type Printer func(w io.Writer, a Args, data []byte) error

// Client is one client command's invocation: where it prints, the
// settings it calls the admin API with, and its parsed flags.
type Client struct {
	Stdout io.Writer
	Getenv func(string) string

	Server    string // admin API base URL
	TokenFile string // read when QL3_TOKEN is unset
	CAFile    string // extra roots for an https server
	Insecure  bool   // allow a token over plain HTTP beyond loopback
	// CheckToken checks an API token's shape before it is sent.
	CheckToken func(token string) error

	Args Args
	// Print is the command's text form (nil: it prints JSON only);
	// Outcome, when set, decides the error from the answer.
	Print   Printer
	Outcome func(data []byte) error
}
