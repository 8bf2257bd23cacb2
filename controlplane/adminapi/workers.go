package adminapi

import (
	"net/http"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/httpkit"
)

func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	page, err := s.b.ListWorkers(r.Context(), pr)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := List[WorkerView]{Items: make([]WorkerView, 0, len(page.Items)), NextCursor: page.NextCursor}
	for _, wk := range page.Items {
		v, err := s.withSession(r.Context(), wk)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out.Items = append(out.Items, v)
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) registerWorker(w http.ResponseWriter, r *http.Request) {
	var req RegisterWorkerRequest
	if err := s.decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	wk, err := s.b.RegisterWorker(r.Context(), controlplane.WorkerInput{Name: req.Name, TLSIdentity: req.TLSIdentity})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/workers/"+wk.ID)
	httpkit.WriteJSON(w, http.StatusCreated, wk)
}

func (s *Server) getWorker(w http.ResponseWriter, r *http.Request) {
	v, err := s.workerView(r.Context(), r.PathValue("worker"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, v)
}

func (s *Server) listCredentials(w http.ResponseWriter, r *http.Request) {
	creds, err := s.b.ListWorkerCredentials(r.Context(), r.PathValue("worker"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, List[controlplane.WorkerCredential]{Items: creds})
}

// issued answers a new credential. The text is a secret: the response must
// not be cached anywhere (Cache-Control: no-store is set for every route).
func issued(w http.ResponseWriter, c controlplane.WorkerCredential, text string) {
	httpkit.WriteJSON(w, http.StatusCreated, IssuedCredential{WorkerCredential: c, Credential: text})
}

func (s *Server) issueCredential(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	wk, err := s.credentialWorker(w, r, &none)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, text, err := s.b.IssueWorkerCredential(r.Context(), wk.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	issued(w, c, text)
}

func (s *Server) rotateCredentials(w http.ResponseWriter, r *http.Request) {
	var req RotateCredentialsRequest
	wk, err := s.credentialWorker(w, r, &req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, text, err := s.b.RotateWorkerCredentials(r.Context(), wk.ID, req.GraceMs)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	issued(w, c, text)
}

func (s *Server) revokeCredential(w http.ResponseWriter, r *http.Request) {
	var none struct{}
	wk, err := s.credentialWorker(w, r, &none)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	c, err := s.b.RevokeWorkerCredential(r.Context(), wk.ID, r.PathValue("credential"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, c)
}

// credentialWorker decodes a credential request's optional body into body
// and resolves the {worker} path value.
func (s *Server) credentialWorker(w http.ResponseWriter, r *http.Request, body any) (controlplane.Worker, error) {
	if err := s.decodeOptionalBody(w, r, body); err != nil {
		return controlplane.Worker{}, err
	}
	return s.b.GetWorker(r.Context(), r.PathValue("worker"))
}
