#!/usr/bin/env node
// Prints when QingLong 2.21 fires cron expressions: the next N instants
// after --start, computed by the cron-parser that node-schedule 2.1.1 (the
// scheduler of QingLong's back/schedule/addCron.ts) loads, in the
// process's local zone (QingLong passes no tz: its container's TZ
// decides), exactly as node-schedule's Job.schedule does:
// parseExpression(spec, {currentDate: start}) and then next() each time.
//
// Usage (in this folder, after `npm ci`):
//   TZ=Asia/Shanghai node fires.js --start 2026-03-01T00:00:00Z --count 20 < exprs.txt > out.json
// One expression per line on stdin; an expression cron-parser refuses is
// reported with its error.
'use strict';

const path = require('path');
const cronParser = require(require.resolve('cron-parser', { paths: [path.dirname(require.resolve('node-schedule'))] }));

function args() {
  const out = { count: 20 };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    switch (a[i]) {
      case '--start': out.start = new Date(a[i + 1]); break;
      case '--count': out.count = Number(a[i + 1]); break;
      default: throw new Error(`unknown argument ${a[i]}`);
    }
  }
  if (!out.start || isNaN(out.start)) throw new Error('--start ISO-8601 is required');
  return out;
}

const o = args();
const exprs = require('fs').readFileSync(0, 'utf8').split('\n').map((s) => s.trim()).filter(Boolean);
const fires = {};
const refused = {};
for (const e of exprs) {
  try {
    const it = cronParser.parseExpression(e, { currentDate: o.start });
    const list = [];
    for (let i = 0; i < o.count; i++) list.push(it.next().toDate().toISOString());
    fires[e] = list;
  } catch (err) {
    refused[e] = String(err.message || err);
  }
}
const version = require(require.resolve('cron-parser/package.json', { paths: [path.dirname(require.resolve('node-schedule'))] })).version;
process.stdout.write(JSON.stringify({ zone: process.env.TZ, start: o.start.toISOString(), count: o.count,
  cronParser: version, nodeSchedule: require('node-schedule/package.json').version, fires, refused }, null, 1) + '\n');
