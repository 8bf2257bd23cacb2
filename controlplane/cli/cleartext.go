package cli

import (
	"net"
	"net/http"
	"net/url"

	"github.com/ql3/ql3/core/cleartext"
	"github.com/ql3/ql3/core/errs"
)

// API tokens never cross a network in cleartext unless the user says so
// (--insecure): the client only sends a token over http:// to a loopback
// peer, decided by the address actually connected, never by the spelling
// of a host name (serve's side of the rule is the app's listenAdmin).

// errCleartextToken is the refusal of core/cleartext, the rule ql3-edge's
// CLI applies too.
var errCleartextToken = cleartext.ErrToken

// guardCleartext checks the server URL up front (an IP literal beyond
// loopback fails without any network traffic) and installs the dial-time
// check for host names on tr (core/cleartext).
func guardCleartext(base *url.URL, insecure bool, tr *http.Transport) error {
	if base.Scheme != "http" || insecure {
		return nil
	}
	if err := cleartext.Check(base.Scheme, base.Hostname()); err != nil {
		return errs.Invalidf("server", "%s: %v; %s", base.Host, errCleartextToken, cleartextRemedy)
	}
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = cleartext.GuardDial(dial, func(c net.Conn) string { return c.RemoteAddr().String() })
	return nil
}

// cleartextRemedy is core/cleartext's advice with this CLI's CA flag.
const cleartextRemedy = "use https:// (with --ca-file if needed) or pass --insecure"
