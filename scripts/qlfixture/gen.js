#!/usr/bin/env node
// Generates a QingLong 2 data directory (db/database.sqlite, scripts/,
// config/config.sh) for ql3's import tests.
//
// The database schema is QingLong's own: this script transpiles the
// Sequelize model definitions of a QingLong checkout (back/data/*.ts) at
// generation time, points them at a new SQLite file, lets Sequelize create
// the tables (Model.sync, as QingLong's loader does) and inserts the rows
// below through those models. No QingLong code is kept in this repository.
//
// Usage:
//   npm ci                        (sequelize, sqlite3, typescript; pinned)
//   node gen.js --qinglong QL_CHECKOUT --out DIR [--scale N] [--unsafe]
//
// --scale N adds N tasks, 2.5·N env rows and 1.5·N scripts of the common
// shapes (the figures of issue #25 use N = 2000); the default fixture is
// small and covers every classification. --unsafe adds a symlink to /etc,
// a world-writable file and a hard link to the scripts folder.
'use strict';

const fs = require('fs');
const path = require('path');
const ts = require('typescript');
const { Sequelize } = require('sequelize');

function args() {
  const out = { scale: 0 };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const v = a[i + 1];
    switch (a[i]) {
      case '--qinglong': out.qinglong = v; i++; break;
      case '--out': out.out = v; i++; break;
      case '--scale': out.scale = Number(v); i++; break;
      case '--unsafe': out.unsafe = true; break;
      default: throw new Error(`unknown argument ${a[i]}`);
    }
  }
  if (!out.qinglong || !out.out) throw new Error('usage: node gen.js --qinglong QL_CHECKOUT --out DIR [--scale N]');
  if (!Number.isInteger(out.scale) || out.scale < 0 || out.scale > 100000) throw new Error('--scale must be 0..100000');
  return out;
}

// loadModels transpiles QingLong's model files into a temporary folder
// beside a stub for their '.' import (the Sequelize instance), and
// requires them.
function loadModels(qinglong, storage) {
  const src = path.join(qinglong, 'back', 'data');
  const tmp = fs.mkdtempSync(path.join(require('os').tmpdir(), 'qlmodels-'));
  const sequelize = new Sequelize({ dialect: 'sqlite', storage, logging: false });
  fs.writeFileSync(path.join(tmp, 'index.js'), 'module.exports = { sequelize: global.__qlfixtureSequelize };\n');
  global.__qlfixtureSequelize = sequelize;
  const models = {};
  for (const [file, name] of [['cron', 'CrontabModel'], ['env', 'EnvModel'], ['subscription', 'SubscriptionModel'],
    ['dependence', 'DependenceModel'], ['open', 'AppModel']]) {
    const code = fs.readFileSync(path.join(src, file + '.ts'), 'utf8');
    const js = ts.transpileModule(code, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2019, esModuleInterop: true } });
    fs.writeFileSync(path.join(tmp, file + '.js'), js.outputText);
    // The models import 'sequelize' and 'toad-scheduler' (types only): resolve from here.
    module.paths.forEach((p) => { if (!require.main.paths.includes(p)) require.main.paths.push(p); });
    const mod = requireFrom(tmp, './' + file);
    if (!mod[name]) throw new Error(`${file}.ts does not export ${name}`);
    models[name] = mod[name];
  }
  return { sequelize, models, tmp };
}

function requireFrom(dir, id) {
  const Module = require('module');
  const m = new Module(path.join(dir, id + '.js'), module);
  m.filename = path.join(dir, id + '.js');
  m.paths = Module._nodeModulePaths(dir).concat(module.paths);
  m._compile(fs.readFileSync(m.filename, 'utf8'), m.filename);
  return m.exports;
}

const day = Date.UTC(2026, 0, 1);
const at = (n) => new Date(day + n * 60000);

// The fixture: one or more rows of every shape the import classifies.
function crontabs() {
  return [
    { name: '京东签到', command: 'task jd_sign.js', schedule: '5 8 * * *', labels: ['京东', 'daily'] },
    { name: 'multi schedule', command: 'task dir/sign.py --fast', schedule: '0 9 * * *', extra_schedules: [{ schedule: '0 21 * * *' }, { schedule: '30 12 * * 1-5' }], allow_multiple_instances: 1 },
    { name: '', command: 'curl -fsS https://example.invalid/ping', schedule: '*/5 * * * *' },
    { name: 'disabled task', command: 'task jd_sign.js', schedule: '0 1 * * *', isDisabled: 1 },
    { name: 'uses QingLong helpers', command: 'cd $QL_DIR && bash backup.sh', schedule: '0 0 * * *' },
    { name: 'before and after', command: 'task jd_sign.js', schedule: '0 2 * * *', task_before: 'echo before', task_after: 'echo after' },
    { name: '删除日志', command: 'ql rmlog 7', schedule: '30 7 */7 * *', isSystem: 1 },
    { name: 'once', command: 'task jd_sign.js', schedule: '@once' },
    { name: 'boot', command: 'task jd_sign.js', schedule: '@boot' },
    { name: 'bad cron', command: 'task jd_sign.js', schedule: '61 * * * *' },
    { name: 'per account', command: 'task jd_sign.js conc JD_COOKIE', schedule: '0 3 * * *' },
    { name: 'from subscription', command: 'task faker2/jd_bean.js', schedule: '0 4 * * *', sub_id: 1 },
    { name: 'repo command', command: 'ql repo https://example.invalid/scripts.git "jd_|jx_" "test" "utils"', schedule: '0 5 * * *' },
    { name: '京东签到', command: 'task jd_sign2.js', schedule: '5 9 * * *' },
    { name: 'with timeout', command: 'task -m 300 tool.ts now', schedule: '0 0 * * 0' },
    { name: 'seconds', command: 'task jd_sign.js', schedule: '*/30 * * * * *' },
    { name: 'Sunday as 7', command: 'task jd_sign.js', schedule: '0 6 * * 7' },
    { name: 'shell script', command: 'bash /ql/data/scripts/backup.sh', schedule: '15 3 * * *', work_dir: '/ql/data/scripts' },
  ];
}

function envs() {
  return [
    { name: 'JD_COOKIE', value: 'pt_key=AAA111;pt_pin=alice;', remarks: '账号一', position: 4500000000000000, created: 1 },
    { name: 'JD_COOKIE', value: 'pt_key=BBB222;pt_pin=bob;', remarks: '账号二', position: 4500000000000000, created: 2 },
    { name: 'JD_COOKIE', value: 'pt_key=CCC333;pt_pin=carol;', remarks: 'pinned', position: 100, isPinned: 1, created: 3 },
    { name: 'JD_COOKIE', value: 'pt_key=DDD444;pt_pin=dave;', remarks: '停用', position: 9000000000000000, status: 1, created: 4 },
    { name: 'JD_COOKIE', value: 'pt_key=EEE555;pt_pin=erin;', remarks: 'moved up', position: 6750000000000000, created: 5 },
    { name: 'PUSH_KEY', value: 'SCT0000fixture', remarks: 'ServerChan', labels: ['notify'], created: 6 },
    { name: 'bad-name', value: 'never exported', created: 7 },
    { name: 'QL3_TOKEN', value: 'reserved', created: 8 },
    { name: 'SPACED', value: ' padded value ', created: 9 },
    { name: 'BIG', value: 'x'.repeat(128 * 1024 + 1), created: 10 },
  ];
}

function subscriptions() {
  return [
    { name: 'faker2', alias: 'faker2', type: 'public-repo', url: 'https://example.invalid/faker2.git', branch: 'main', schedule: '0 */6 * * *', schedule_type: 'crontab', whitelist: 'jd_|jx_', blacklist: 'test', extensions: 'js py', autoAddCron: 1, autoDelCron: 1 },
    { name: '私有仓库', alias: 'private', type: 'private-repo', url: 'git@example.invalid:me/private.git', branch: 'master', schedule: '0 0 * * *', schedule_type: 'crontab', pull_type: 'ssh-key', pull_option: { private_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nfixture\n-----END OPENSSH PRIVATE KEY-----' } },
    { name: 'single file', alias: 'raw1', type: 'file', url: 'https://example.invalid/raw/sign.js', schedule_type: 'interval', interval_schedule: { type: 'hours', value: 12 } },
    { name: 'regex filter', alias: 'rx', type: 'public-repo', url: 'https://example.invalid/rx.git', schedule: '0 1 * * *', schedule_type: 'crontab', whitelist: '^(jd|jx)_.*\\.js$' },
  ];
}

function dependences() {
  return [
    { name: 'axios@1.6.0', type: 0 }, { name: '@scope/pkg@2.0.0', type: 0 }, { name: 'requests==2.31.0', type: 1 },
    { name: 'curl', type: 2 }, { name: 'got crypto-js', type: 0 },
  ];
}

const configSh = `## QingLong config (fixture)
export RandomDelay="300"
export TG_BOT_TOKEN='123456:fixture-token'
export TG_USER_ID=10001
export PROXY_URL="http://$HOST:7890"
AutoAddCron="true"
export QL3_SECRET=1
`;

const scriptFiles = {
  'jd_sign.js': "// cron: 5 8 * * *\nconst $ = new Env('京东签到');\nconst u = require('./utils');\nconsole.log(u.hello(process.env.JD_COOKIE));\n",
  'jd_sign2.js': "// cron: 5 9 * * *\nconsole.log('second');\n",
  'utils.js': "module.exports = { hello: (v) => 'hello ' + (v || '').length };\n",
  'dir/sign.py': "# cron: 0 9 * * *\nimport os\nfrom helper import greet\nprint(greet(os.environ.get('JD_COOKIE', '')))\n",
  'dir/helper.py': "def greet(v):\n    return 'hello %d' % len(v)\n",
  'tool.ts': "// cron: 0 0 * * 0\nconsole.log('ts');\n",
  'backup.sh': "#!/usr/bin/env bash\n# cron: 15 3 * * *\necho backup\n",
};

function writeScripts(dir, scale, unsafe) {
  for (const [rel, text] of Object.entries(scriptFiles)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text, { mode: 0o644 });
  }
  // Entries the import refuses file by file. git keeps none of them
  // (no hard links, no 0666 mode, and a link to /etc is no fixture to
  // commit): tests that need them add them to their copy.
  if (unsafe) {
    fs.symlinkSync('/etc', path.join(dir, 'etc-link'));
    fs.writeFileSync(path.join(dir, 'open.js'), "console.log('world-writable');\n");
    fs.chmodSync(path.join(dir, 'open.js'), 0o666);
    fs.linkSync(path.join(dir, 'utils.js'), path.join(dir, 'utils-hardlink.js'));
  }
  for (let i = 0; i < Math.floor(scale * 1.5); i++) {
    const rel = `bulk/s${String(i).padStart(5, '0')}.js`;
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), `// cron: ${i % 60} ${i % 24} * * *\nconsole.log(${i});\n`, { mode: 0o644 });
  }
}

async function main() {
  const o = args();
  fs.rmSync(o.out, { recursive: true, force: true });
  for (const d of ['db', 'scripts', 'config']) fs.mkdirSync(path.join(o.out, d), { recursive: true });
  const storage = path.join(o.out, 'db', 'database.sqlite');
  const { sequelize, models, tmp } = loadModels(o.qinglong, storage);
  try {
    for (const m of Object.values(models)) await m.sync();
    const crons = crontabs();
    for (let i = 0; i < o.scale; i++) {
      crons.push({ name: `bulk ${i}`, command: `task bulk/s${String(Math.floor(i * 1.5)).padStart(5, '0')}.js`, schedule: `${i % 60} ${i % 24} * * *` });
    }
    await models.CrontabModel.bulkCreate(crons.map((c) => ({ status: 1, isDisabled: 0, isSystem: 0, isPinned: 0, labels: [], ...c })));
    const envRows = envs();
    for (let i = 0; i < Math.floor(o.scale * 2.5); i++) {
      envRows.push({ name: `BULK_${i % 500}`, value: `value-${i}`, created: 100 + i, position: 4500000000000000 - i });
    }
    await models.EnvModel.bulkCreate(envRows.map(({ created, ...e }) => ({ status: 0, position: 4500000000000000, isPinned: 0, labels: [], ...e })));
    // createdAt decides the order of equal positions: make it deterministic.
    for (let i = 0; i < envRows.length; i++) {
      await sequelize.query('UPDATE Envs SET createdAt = ?, updatedAt = ? WHERE id = ?', { replacements: [at(envRows[i].created), at(envRows[i].created), i + 1] });
    }
    await models.SubscriptionModel.bulkCreate(subscriptions().map((s) => ({ status: 1, is_disabled: 0, ...s })));
    await models.DependenceModel.bulkCreate(dependences().map((d) => ({ status: 1, ...d })));
    await models.AppModel.bulkCreate([{ name: 'cookie-tool', scopes: ['envs'], client_id: 'fixtureClientId', client_secret: 'fixtureClientSecret', tokens: [] }]);
    for (const t of ['Crontabs', 'Subscriptions', 'Dependences', 'Apps']) {
      await sequelize.query(`UPDATE ${t} SET createdAt = ?, updatedAt = ?`, { replacements: [at(0), at(0)] });
    }
  } finally {
    await sequelize.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  fs.writeFileSync(path.join(o.out, 'config', 'config.sh'), configSh);
  writeScripts(path.join(o.out, 'scripts'), o.scale, o.unsafe);
  console.log(`wrote ${o.out}`);
}

main().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
