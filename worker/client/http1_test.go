package client

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestReadHeadAndChunked(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\nTransfer-Encoding: chunked\r\nRetry-After:  7 \r\n\r\n" +
		"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(raw))
	status, h, err := readHead(br)
	if err != nil || status != 200 || h.Get("retry-after") != "7" || h.Get("DATE") == "" {
		t.Fatalf("status %d header %v err %v", status, h, err)
	}
	if _, err := ParseDate(h.Get("Date")); err != nil {
		t.Fatal(err)
	}
	body, err := readChunked(br, 100)
	if err != nil || string(body) != "hello, world" {
		t.Fatalf("body %q err %v", body, err)
	}
}

func TestReadRefusesMalformedAndOversized(t *testing.T) {
	for name, raw := range map[string]string{
		"not http":       "SSH-2.0-x\r\n\r\n",
		"bad code":       "HTTP/1.1 2x0 OK\r\n\r\n",
		"space in name":  "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"no colon":       "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n",
		"head too large": "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxHeaderBytes) + "\r\n\r\n",
		"truncated":      "HTTP/1.1 200 OK\r\nX: 1\r\n",
	} {
		if _, _, err := readHead(bufio.NewReader(strings.NewReader(raw))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	many := "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: 1\r\n", maxHeaders+1) + "\r\n"
	if _, _, err := readHead(bufio.NewReader(strings.NewReader(many))); err == nil {
		t.Error("too many header fields accepted")
	}
	for name, raw := range map[string]string{
		"bad size":  "zz\r\nhello\r\n0\r\n\r\n",
		"bad end":   "5\r\nhelloXX\r\n0\r\n\r\n",
		"truncated": "5\r\nhel",
	} {
		if _, err := readChunked(bufio.NewReader(strings.NewReader(raw)), 100); err == nil {
			t.Errorf("chunked %s: accepted", name)
		}
	}
	if _, err := readChunked(bufio.NewReader(strings.NewReader("5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n")), 8); !errors.Is(err, errTooLarge) {
		t.Errorf("oversized chunked body: %v", err)
	}
}

func FuzzReadHead(f *testing.F) {
	f.Add("HTTP/1.1 204 No Content\r\nRetry-After: 2\r\n\r\n")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		br := bufio.NewReader(strings.NewReader(raw))
		status, h, err := readHead(br)
		if err != nil {
			return
		}
		if status < 100 || status > 599 || len(h) > maxHeaders {
			t.Fatalf("status %d with %d fields accepted", status, len(h))
		}
		if body, err := readChunked(br, 1024); err == nil && len(body) > 1024 {
			t.Fatalf("chunked body of %d bytes beyond the limit", len(body))
		}
	})
}
