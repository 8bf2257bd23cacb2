package httpapi

import (
	"net/http"

	"github.com/ql3/ql3/core/qlopen"
	"github.com/ql3/ql3/httpkit"
)

// QingLong's /open/system (back/api/system.ts) where it maps onto ql3
// (ADR 0057): GET /open/system answers its shape with ql3's version.
// Every other item is refused one by one with QingLong's 404 shape and
// the reason, so a tool learns what ql3 does instead.

// OpenSystem is data of GET /open/system (core/qlopen).
type OpenSystem = qlopen.System

func (s *Server) openSystemRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/system", s.withApp(func(w http.ResponseWriter, r *http.Request) {
		openOK(w, qlopen.SystemInfo(s.version))
	}))
	mux.HandleFunc("/open/system/", s.withApp(func(w http.ResponseWriter, r *http.Request) {
		openFail(w, http.StatusNotFound, qlopen.SystemRefusal(r.Method, r.URL.Path))
	}))
}
