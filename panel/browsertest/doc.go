// Package browsertest drives the web panel in a real headless Chromium
// (github.com/chromedp/chromedp) against real ql3-edge and ql3-control
// binaries. It is a module of its own so the panel module, which both
// binaries link, never depends on the browser driver.
package browsertest
