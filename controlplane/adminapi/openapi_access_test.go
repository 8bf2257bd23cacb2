package adminapi_test

import (
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/accessapi"
	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/core/totp"
	"github.com/ql3/ql3/httpkit"
)

// tokenRoutes is the scoped tokens' part of the route table (tokens.go,
// ADR 0060): the edge's shapes.
func tokenRoutes() []openapi.Route {
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/tokens", Summary: "scoped API tokens (never a secret or digest; admin scope)",
			Responses: withErrors(openapi.OK("every token", accessapi.List[controlplane.APIToken]{}), 503)},
		{Method: "POST", Path: "/api/v1/tokens", Summary: "create a scoped API token: its text is in this response only (audited)",
			Request: accessapi.CreateTokenRequest{}, Responses: withErrors(openapi.Created("created", accessapi.CreatedToken{}), 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/tokens/{id}", Summary: "revoke a token (audited)",
			Params:    []openapi.Param{openapi.PathParam("id", "token id")},
			Responses: withErrors(map[int]openapi.Response{204: {Description: "revoked"}}, 404, 503)},
	}
}

// userRoutes is the accounts' part of the route table (accounts.go, ADR
// 0060): the edge's shapes.
func userRoutes() []openapi.Route {
	user := []openapi.Param{openapi.PathParam("username", "account name")}
	done := func(what string) map[int]openapi.Response {
		return withErrors(map[int]openapi.Response{204: {Description: what}}, 404, 413, 503)
	}
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/users", Summary: "accounts (never a hash or a TOTP secret; admin scope)",
			Responses: withErrors(openapi.OK("every account", accessapi.List[accessapi.UserView]{}), 503)},
		{Method: "POST", Path: "/api/v1/users", Summary: "add an account (argon2id password hash; audited)",
			Request: accessapi.CreateUserRequest{}, Responses: withErrors(openapi.Created("created", accessapi.UserView{}), 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/users/{username}", Summary: "delete an account: its sessions end (audited)", Params: user, Responses: done("deleted")},
		{Method: "PUT", Path: "/api/v1/users/{username}/password", Summary: "set the password; lifts a lock (audited)", Params: user,
			Request: accessapi.PasswordRequest{}, Responses: done("changed")},
		{Method: "POST", Path: "/api/v1/users/{username}/totp/setup", Summary: "a fresh second-factor secret and its otpauth:// URI (not stored)", Params: user,
			Responses: withErrors(openapi.OK("the secret", accessapi.TOTPSetup{}), 404, 503)},
		{Method: "PUT", Path: "/api/v1/users/{username}/totp", Summary: "turn the second factor on with a current code (audited)", Params: user,
			Request: accessapi.TOTPConfirm{}, Responses: done("on")},
		{Method: "DELETE", Path: "/api/v1/users/{username}/totp", Summary: "turn the second factor off (audited)", Params: user, Responses: done("off")},
		{Method: "GET", Path: "/api/v1/signins", Summary: "the sign-in log, newest first (never a password or a code)",
			Params:    []openapi.Param{openapi.Query("before", "integer", "lines before this seq"), openapi.Query("limit", "integer", "1..200, default 50")},
			Responses: withErrors(openapi.OK("sign-in lines", accessapi.List[controlplane.SignIn]{}), 503)},
		{Method: "POST", Path: accessapi.PasswordSignInPath, Summary: "sign in with a username, password and (when on) a TOTP code: the panel's session cookie (open)",
			Request: accessapi.PasswordSignIn{}, Responses: withErrors(map[int]openapi.Response{
				200: {Description: "signed in (Set-Cookie)", Body: httpkit.SessionStatus{}},
				429: errResp("too many failed sign-ins from this address")}, 503)},
	}
}

// accountExamples drives the account routes for TestOpenAPIExamples.
func accountExamples(t *testing.T, f fixture, send func(method, path, body string, hdr ...string)) {
	f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`, nil)
	f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`, nil)
	f.call("POST", "/api/v1/users", `{"username":"bob","password":"short"}`, nil)
	f.call("GET", "/api/v1/users", nil, nil)
	f.call("PUT", "/api/v1/users/alice/password", `{"password":"battery staple"}`, nil)
	f.call("PUT", "/api/v1/users/nobody/password", `{"password":"battery staple"}`, nil)
	var setup accessapi.TOTPSetup
	f.call("POST", "/api/v1/users/alice/totp/setup", nil, &setup)
	key, err := totp.DecodeSecret(setup.Secret)
	if err != nil {
		t.Fatal(err)
	}
	f.call("PUT", "/api/v1/users/alice/totp", `{"secret":"`+setup.Secret+`","code":"000000x"}`, nil)
	f.call("PUT", "/api/v1/users/alice/totp", `{"secret":"`+setup.Secret+`","code":"`+totp.Code(key, time.Now())+`"}`, nil)
	send("POST", accessapi.PasswordSignInPath, `{"username":"alice","password":"wrong password"}`)
	send("POST", accessapi.PasswordSignInPath, `{"username":"alice","password":"battery staple"}`)
	f.call("DELETE", "/api/v1/users/alice/totp", nil, nil)
	send("POST", accessapi.PasswordSignInPath, `{"username":"alice","password":"battery staple"}`)
	f.call("GET", "/api/v1/signins?limit=2", nil, nil)
	f.call("GET", "/api/v1/signins?limit=500", nil, nil)
	f.call("DELETE", "/api/v1/users/alice", nil, nil)
	f.call("DELETE", "/api/v1/users/alice", nil, nil)
}
