// sendNotify.js — shipped by ql3-edge into the scripts folder.
//
// QingLong's call shape: const { sendNotify } = require('./sendNotify');
// await sendNotify(title, content). The message goes to the channels of
// the notification rules that name the kind "script" for this task,
// through ql3's outbox (retried, logged). It posts to QL3_NOTIFY_URL with
// the Run's QL3_NOTIFY_TOKEN; outside a ql3 Run it only prints.
'use strict';

const http = require('http');
const https = require('https');

function sendNotify(text, desp, params, author) {
  const url = process.env.QL3_NOTIFY_URL;
  const token = process.env.QL3_NOTIFY_TOKEN;
  const title = String(text == null ? '' : text);
  const content = String(desp == null ? '' : desp) + (author ? '\n\n' + author : '');
  if (!url || !token) {
    console.log('sendNotify: not running under ql3 (QL3_NOTIFY_URL is not set); message:\n' + title + '\n' + content);
    return Promise.resolve();
  }
  const body = Buffer.from(JSON.stringify({ title: title, content: content }));
  const u = new URL(url);
  const mod = u.protocol === 'https:' ? https : http;
  return new Promise(function (resolve) {
    const req = mod.request(u, {
      method: 'POST',
      timeout: 15000,
      headers: { 'Content-Type': 'application/json', 'Content-Length': body.length, Authorization: 'Bearer ' + token },
    }, function (res) {
      let answer = '';
      res.setEncoding('utf8');
      res.on('data', function (c) { if (answer.length < 4096) answer += c; });
      res.on('end', function () {
        if (res.statusCode === 202) {
          console.log('sendNotify: queued for ' + JSON.parse(answer).queued + ' channel(s)');
        } else {
          console.log('sendNotify: refused (HTTP ' + res.statusCode + '): ' + answer);
        }
        resolve();
      });
    });
    req.on('timeout', function () { req.destroy(new Error('timed out')); });
    req.on('error', function (e) { console.log('sendNotify: ' + e.message); resolve(); });
    req.end(body);
  });
}

module.exports = { sendNotify: sendNotify };
