package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/core/totp"
	"github.com/ql3/ql3/httpkit"
)

// The /open/ routes are QingLong's Open API (ADR 0048): their requests and
// answers are QingLong's, not this API's ({code, data, message}, numeric
// ids), so they are kept out of this document and described by ADR 0048
// and open.go; the contract test (open_test.go) holds them to QingLong's
// shapes.
func init() {
	for _, p := range New(Config{}).patterns {
		if strings.HasPrefix(p, "/open/") || strings.Contains(p, " /open/") {
			notAPI[p] = true
		}
	}
}

// accessRoutes is the route table of scoped tokens, Open API apps and
// accounts (access.go, accounts.go).
func accessRoutes() []openapi.Route {
	id := []openapi.Param{openapi.PathParam("id", "token id (the 16 hex characters after ql3c_)")}
	app := []openapi.Param{openapi.PathParam("id", "app number")}
	user := []openapi.Param{openapi.PathParam("username", "account name")}
	gone := func(desc string) map[int]openapi.Response {
		return withErrors(map[int]openapi.Response{204: {Description: desc}}, 404, 503)
	}
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/tokens", Summary: "scoped API tokens, newest first (never a secret)",
			Responses: withErrors(openapi.OK("tokens", List[APIToken]{}), 503)},
		{Method: "POST", Path: "/api/v1/tokens", Summary: "create a scoped token: the token is shown once", Request: CreateTokenRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: CreatedToken{}}}, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/tokens/{id}", Summary: "revoke a token", Params: id, Responses: gone("revoked")},
		{Method: "GET", Path: "/api/v1/apps", Summary: "Open API apps (never a secret)", Responses: withErrors(openapi.OK("apps", List[OpenAppView]{}), 503)},
		{Method: "POST", Path: "/api/v1/apps", Summary: "create an Open API app: the client secret is shown once", Request: CreateAppRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: CreatedApp{}}}, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/apps/{id}", Summary: "delete an app and its tokens", Params: app, Responses: gone("deleted")},
		{Method: "GET", Path: "/api/v1/users", Summary: "accounts", Responses: withErrors(openapi.OK("accounts", List[UserView]{}), 503)},
		{Method: "POST", Path: "/api/v1/users", Summary: "create an account (argon2id password hash)", Request: CreateUserRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: UserView{}}}, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/users/{username}", Summary: "delete an account", Params: user, Responses: gone("deleted")},
		{Method: "PUT", Path: "/api/v1/users/{username}/password", Summary: "set the password (also lifts a lock)", Params: user,
			Request: PasswordRequest{}, Responses: withErrors(map[int]openapi.Response{204: {Description: "set"}}, 404, 413, 503)},
		{Method: "POST", Path: "/api/v1/users/{username}/totp/setup", Summary: "a fresh TOTP secret and its otpauth:// URI (not stored)",
			Params: user, Responses: withErrors(openapi.OK("secret", TOTPSetup{}), 404, 503)},
		{Method: "PUT", Path: "/api/v1/users/{username}/totp", Summary: "turn the second factor on with the secret and a current code",
			Params: user, Request: TOTPConfirm{}, Responses: withErrors(map[int]openapi.Response{204: {Description: "on"}}, 404, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/users/{username}/totp", Summary: "turn the second factor off", Params: user, Responses: gone("off")},
		{Method: "GET", Path: "/api/v1/signins", Summary: "the sign-in log, newest first",
			Params:    []openapi.Param{openapi.Query("before", "integer", "lines before this seq"), openapi.Query("limit", "integer", "lines (1..200)")},
			Responses: withErrors(openapi.OK("lines; nextCursor is the ?before= of the next page", List[SignInLine]{}), 503)},
		{Method: "POST", Path: PasswordSignInPath, Summary: "sign in with username, password and (if on) a TOTP code: sets the session cookie",
			Request: PasswordSignIn{}, Responses: func() map[int]openapi.Response {
				r := withErrors(openapi.OK("signed in", httpkit.SessionStatus{}), 413, 503)
				r[429] = errResp("too many failed sign-ins from this address")
				r[403] = errResp("the account is locked (the message says until when), or a cross-origin request")
				return r
			}()},
	}
}

func (f *fixture) accessExamples() {
	var tok CreatedToken
	f.decode("POST", "/api/v1/tokens", `{"name":"ci","scopes":["runs"],"expiresAtMs":`+strconv.FormatInt(fixtureStart.Add(time.Hour).UnixMilli(), 10)+`}`, http.StatusCreated, &tok)
	f.call("POST", "/api/v1/tokens", `{"name":"ci","scopes":["root"]}`)
	f.call("GET", "/api/v1/tokens", "")
	f.call("DELETE", "/api/v1/tokens/"+tok.ID, "")
	f.call("DELETE", "/api/v1/tokens/"+tok.ID, "")
	var app CreatedApp
	f.decode("POST", "/api/v1/apps", `{"name":"bot","scopes":["envs","crons"]}`, http.StatusCreated, &app)
	f.call("POST", "/api/v1/apps", `{"name":"bot","scopes":["envs"]}`)
	f.call("GET", "/api/v1/apps", "")
	f.call("DELETE", "/api/v1/apps/"+strconv.FormatInt(app.ID, 10), "")
	f.call("DELETE", "/api/v1/apps/"+strconv.FormatInt(app.ID, 10), "")
	f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`)
	f.call("POST", "/api/v1/users", `{"username":"alice","password":"correct horse"}`)
	f.call("POST", "/api/v1/users", `{"username":"bob","password":"short"}`)
	f.call("GET", "/api/v1/users", "")
	f.call("PUT", "/api/v1/users/alice/password", `{"password":"battery staple"}`)
	var setup TOTPSetup
	f.decode("POST", "/api/v1/users/alice/totp/setup", "", http.StatusOK, &setup)
	key, _ := totp.DecodeSecret(setup.Secret)
	f.call("PUT", "/api/v1/users/alice/totp", `{"secret":"`+setup.Secret+`","code":"`+totp.Code(key, fixtureStart)+`"}`)
	f.call("DELETE", "/api/v1/users/alice/totp", "")
	f.send("POST", PasswordSignInPath, `{"username":"alice","password":"battery staple"}`)
	f.send("POST", PasswordSignInPath, `{"username":"alice","password":"wrong password"}`)
	f.call("GET", "/api/v1/signins?limit=10", "")
	f.call("DELETE", "/api/v1/users/alice", "")
	f.call("DELETE", "/api/v1/users/alice", "")
}
