package httpkit

import "net/http"

// StatusRecorder remembers the status and size of a response for the
// access log and the HTTP statistics, and forwards Flush so streamed
// answers (log follows) still reach the client as they are written.
type StatusRecorder struct {
	http.ResponseWriter
	Status int   // 0 until the handler writes
	Bytes  int64 // body bytes written
}

// WriteHeader records the first status and forwards it.
func (s *StatusRecorder) WriteHeader(code int) {
	if s.Status == 0 {
		s.Status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200 and counts the bytes.
func (s *StatusRecorder) Write(p []byte) (int, error) {
	if s.Status == 0 {
		s.Status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(p)
	s.Bytes += int64(n)
	return n, err
}

// Flush forwards to the real writer when it can flush.
func (s *StatusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *StatusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
