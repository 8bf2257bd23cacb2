package integration

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

// TestKill9MidDeliveryDeliversAfterRestart: ql3-edge is SIGKILLed while a
// failure notification is on the wire (the receiver holds the answer).
// After a restart the notification is delivered — with the same
// idempotency key, so the receiver can tell it is the same one — and the
// log has exactly one delivered row: nothing lost.
func TestKill9MidDeliveryDeliversAfterRestart(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	arrived := make(chan struct{}, 8)
	hold := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		first := len(keys) == 1
		mu.Unlock()
		arrived <- struct{}{}
		if first {
			<-hold // never answered: the sender dies waiting
		}
	}))
	defer hook.Close()
	defer close(hold)

	data := filepath.Join(t.TempDir(), "data")
	p := startBinary(t, data)
	c := p.client(t, data)
	var ch httpapi.NotifyChannel
	c.api("POST", "/api/v1/notify/channels", map[string]any{"name": "hook", "settings": map[string]any{"kind": "webhook", "server": hook.URL}}, 201, &ch)
	c.api("POST", "/api/v1/notify/rules", map[string]any{"name": "failures", "channels": []string{ch.ID}}, 201, nil)
	c.createTask("broken", shellSpec("exit 3", ""))
	var r httpapi.Run
	c.api("POST", "/api/v1/tasks/broken/runs", nil, 201, &r)
	c.waitRun(r.ID, "to fail", status("failed"))
	<-arrived // the notification is on the wire
	p.stop(syscall.SIGKILL)

	p = startBinary(t, data)
	c = p.client(t, data)
	var list httpapi.DeliveryList
	eventually(t, "the notification to be delivered after the restart", func() bool {
		c.api("GET", "/api/v1/notify/deliveries", nil, 200, &list)
		return len(list.Items) == 1 && list.Items[0].Status == "delivered"
	})
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 2 || keys[0] != keys[1] || keys[0] != list.Items[0].IdempotencyKey {
		t.Fatalf("receiver saw keys %q; the delivery's key is %s", keys, list.Items[0].IdempotencyKey)
	}
	if list.Items[0].RunID != r.ID || list.Items[0].Kind != "failed" {
		t.Fatalf("delivery %+v", list.Items[0])
	}
}
