# notify.py — shipped by ql3-edge into the scripts folder.
#
# QingLong's call shape: from notify import send; send(title, content).
# The message goes to the channels of the notification rules that name
# the kind "script" for this task, through ql3's outbox (retried, logged).
# It posts to QL3_NOTIFY_URL with the Run's QL3_NOTIFY_TOKEN; outside a
# ql3 Run it only prints.
import json
import os
import urllib.error
import urllib.request


def send(title, content="", ignore_default_config=False, **kwargs):
    url = os.environ.get("QL3_NOTIFY_URL")
    token = os.environ.get("QL3_NOTIFY_TOKEN")
    title, content = str(title or ""), str(content or "")
    if not url or not token:
        print("notify: not running under ql3 (QL3_NOTIFY_URL is not set); message:\n%s\n%s" % (title, content))
        return
    body = json.dumps({"title": title, "content": content}).encode("utf-8")
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json",
        "Authorization": "Bearer " + token,
    })
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            print("notify: queued for %d channel(s)" % json.loads(resp.read(4096)).get("queued", 0))
    except urllib.error.HTTPError as e:
        print("notify: refused (HTTP %d): %s" % (e.code, e.read(4096).decode("utf-8", "replace")))
    except Exception as e:  # a notification must never crash the script
        print("notify: %s" % e)
