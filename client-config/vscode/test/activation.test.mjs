// The packaged bundle (dist/extension.js) activated against a stand-in `vscode` module
// (test/fakeVscode.cjs): it starts the real server through vscode-languageclient, forwards the
// target, syncs a fusion_switch.cfg, receives the server's diagnostics and runs its commands;
// when no server can start, the user gets the error with the fix.
// Python: $FUSION_SWITCH_PYTHON, else the repository's .venv/bin/python.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, afterEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { createFake } = require('./fakeVscode.cjs');

const extensionDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = resolve(extensionDir, '..', '..');
const bundle = join(extensionDir, 'dist', 'extension.js');
const manifest = JSON.parse(readFileSync(join(extensionDir, 'package.json'), 'utf8'));
const python = process.env.FUSION_SWITCH_PYTHON || join(repoRoot, '.venv', 'bin', 'python');
const skip = !existsSync(bundle) && 'not built: npm run build';

const CFG = `{
  "Switch": {
    "GraphFusion": {
      "ConvBatchnormFusionPas": "off"
    }
  }
}
`;

// the folders the tests make, removed at the end (every run left a dozen in the temporary
// directory: 182 of the first kind after a day of CI runs)
const made = [];
function temporaryFolder(prefix) {
  const folder = mkdtempSync(join(tmpdir(), prefix));
  made.push(folder);
  return folder;
}
after(() => {
  for (const folder of made) rmSync(folder, { recursive: true, force: true });
});

function defaults() {
  const settings = {};
  for (const [key, schema] of Object.entries(manifest.contributes.configuration.properties)) {
    settings[key] = structuredClone(schema.default);
  }
  return settings;
}

/** Loads a fresh copy of the bundle wired to a new fake `vscode`, and activates it. */
async function activate(settings) {
  const folder = temporaryFolder('fusion-switch-vscode-');
  const fake = createFake({ settings: { ...defaults(), ...settings }, folder });
  const load = Module._load;
  Module._load = function (request, ...rest) {
    return request === 'vscode' ? fake.vscode : load.call(this, request, ...rest);
  };
  let extension;
  try {
    delete require.cache[bundle];
    for (const key of Object.keys(require.cache)) {
      if (key.includes('node_modules')) delete require.cache[key];
    }
    extension = require(bundle);
  } finally {
    Module._load = load;
  }
  const context = { subscriptions: [], extension: { packageJSON: manifest }, extensionPath: extensionDir };
  await extension.activate(context);
  return { fake, extension, folder, context };
}

async function until(predicate, what, seconds = 20) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const value = predicate();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}

const running = [];
afterEach(async () => {
  while (running.length) await running.pop().deactivate();
});

describe('activation with the real server', { skip }, () => {
  test('starts the server from fusionSwitch.server.pythonPath and works on a fusion_switch.cfg', async () => {
    const { fake, extension, folder } = await activate({
      'fusionSwitch.server.pythonPath': python,
      'fusionSwitch.target': 'Ascend950PR_9599',
      'fusionSwitch.trace.server': 'verbose',
    });
    running.push(extension);
    const { recorded } = fake;
    assert.deepEqual(recorded.messages, [], 'no error shown');
    assert.ok(
      recorded.executed.some(([id, key, value]) => id === 'setContext' && key === 'fusionSwitch.serverRunning' && value === true),
      'the serverRunning context (menus) is set',
    );
    assert.ok(recorded.log.some((l) => l.includes(`${python} -m fusion_switch serve`)), 'start logged');
    const initialize = recorded.log.find((l) => l.includes("Sending request 'initialize"));
    assert.ok(initialize, 'trace.server honoured');
    const params = JSON.parse(initialize.slice(initialize.indexOf('Params: ') + 8));
    assert.deepEqual(params.capabilities.experimental.fusionSwitch, { statusNotification: 'fusionSwitch/status' });
    assert.equal(params.initializationOptions.fusionSwitch.target, 'Ascend950PR_9599');
    assert.equal('server' in params.initializationOptions.fusionSwitch, true); // whole section
    // Server commands are registered by the client from executeCommandProvider.
    for (const id of ['fusionSwitch.reloadCatalogue', 'fusionSwitch.selectTarget', 'fusionSwitch.restartServer']) {
      assert.ok(recorded.commands.has(id), `${id} registered`);
    }

    const path = join(folder, 'fusion_switch.cfg');
    writeFileSync(path, CFG);
    const document = fake.open(path, 'fusion-switch', CFG);
    const diagnostics = await until(() => recorded.diagnostics.get(document.uri.toString())?.length && recorded.diagnostics.get(document.uri.toString()), 'diagnostics');
    const unknown = diagnostics.find((d) => (d.code?.value ?? d.code) === 'unknown-rule');
    assert.ok(unknown, JSON.stringify(diagnostics));
    assert.equal(unknown.source, 'fusion-switch');
    assert.match(unknown.message, /Did you mean ConvBatchnormFusionPass/i);
    assert.equal(unknown.range.start.line, 3);

    // The palette passes no argument: the active configuration is named by cfgUri, and the
    // target from the settings (initializationOptions) is in force.
    const reply = await recorded.commands.get('fusionSwitch.reloadCatalogue')();
    assert.ok(reply.rules > 600, JSON.stringify(reply));
    assert.match(reply.target, /Ascend950PR_9599/);

    const status = recorded.statusItems.find((item) => item.id === 'fusionSwitch.status');
    assert.equal(status.shown, true);
    assert.match(status.text, /Ascend950PR_9599|Atlas 350/);
  });
});

describe('status bar', { skip }, () => {
  test('shows the fusionSwitch/status notification; server.command starts any server', async () => {
    const server = fileURLToPath(new URL('./statusServer.mjs', import.meta.url));
    const { fake, extension, folder } = await activate({
      'fusionSwitch.server.command': [process.execPath, server],
      'fusionSwitch.target': 'Ascend910B1',
    });
    running.push(extension);
    const status = fake.recorded.statusItems.find((item) => item.id === 'fusionSwitch.status');
    const path = join(folder, 'fusion_switch.cfg');
    fake.open(path, 'fusion-switch', CFG);
    await until(() => status.text.includes('$(warning)'), "the status notification with the file's counts");
    assert.equal(status.text, '$(circuit-board) Atlas 350 (Ascend950PR_9599) $(warning) 2');
    assert.match(status.tooltip, /Catalogue: 674 rules from built-in/);
    assert.match(status.tooltip, /Suspected rules from the last comparison: 2/);
    assert.equal(status.command, 'fusionSwitch.selectTarget');
    assert.equal(status.shown, true);
  });

  for (const [target, text] of [['', '$(circuit-board) no target'], ['Ascend910B1', '$(circuit-board) Ascend910B1']]) {
    test(`without a notification, shows the configured target: ${JSON.stringify(target)}`, async () => {
      const server = fileURLToPath(new URL('./statusServer.mjs', import.meta.url));
      const { fake, extension, folder } = await activate({
        'fusionSwitch.server.command': [process.execPath, server, '--silent'],
        'fusionSwitch.target': target,
      });
      running.push(extension);
      const status = fake.recorded.statusItems.find((item) => item.id === 'fusionSwitch.status');
      fake.open(join(folder, 'fusion_switch.cfg'), 'fusion-switch', CFG);
      assert.equal(status.shown, true);
      assert.equal(status.text, text);
      assert.match(status.tooltip, /Catalogue: waiting for the server/);
    });
  }
});

describe('when no server can start', { skip }, () => {
  test('a wrong pythonPath names the setting and the install command', async () => {
    const { fake, extension } = await activate({ 'fusionSwitch.server.pythonPath': '/nonexistent/bin/python3' });
    running.push(extension);
    const [[level, text]] = await until(() => fake.recorded.messages.length && fake.recorded.messages, 'an error');
    assert.equal(level, 'error');
    assert.match(text, /setting fusionSwitch\.server\.pythonPath \(\/nonexistent\/bin\/python3: not found/);
    assert.match(text, /pip install fusion-switch/);
    assert.equal(fake.recorded.messages.length, 1, 'one message, not the client\'s as well');
  });

  test('an interpreter without fusion_switch is reported with Python\'s own error', async () => {
    // The project's interpreter with site-packages disabled cannot import fusion_switch.
    const wrapper = join(temporaryFolder('python-'), 'python');
    writeFileSync(wrapper, `#!/bin/sh\nexec ${JSON.stringify(python)} -S "$@"\n`, { mode: 0o755 });
    const { fake, extension } = await activate({ 'fusionSwitch.server.pythonPath': wrapper });
    running.push(extension);
    const [[level, text]] = await until(() => fake.recorded.messages.length && fake.recorded.messages, 'an error');
    assert.equal(level, 'error');
    assert.match(text, /-c import fusion_switch: ModuleNotFoundError: No module named 'fusion_switch'/);
  });

  test('nothing configured and nothing on PATH: says what was tried', async () => {
    const path = process.env.PATH;
    process.env.PATH = temporaryFolder('empty-path-');
    try {
      const { fake, extension } = await activate({});
      running.push(extension);
      const [[level, text]] = await until(() => fake.recorded.messages.length && fake.recorded.messages, 'an error');
      assert.equal(level, 'error');
      assert.match(text, /Tried `fusion-switch` on PATH \(fusion-switch: not found or not executable\)/);
      assert.match(text, /pip install fusion-switch/);
      assert.equal(fake.recorded.commands.has('fusionSwitch.reloadCatalogue'), false);
    } finally {
      process.env.PATH = path;
    }
  });
});

describe('commands from menus and the palette', { skip }, () => {
  test('a menu on a file not open opens it first; bisect from the palette asks for the job', async () => {
    const { fake, extension, folder } = await activate({ 'fusionSwitch.server.pythonPath': python });
    running.push(extension);
    const { recorded, answers, vscode } = fake;
    const path = join(folder, 'fusion_switch.cfg');
    writeFileSync(path, CFG);
    // the explorer menu passes the clicked file's Uri; the server answered "not open" (a review)
    const report = await recorded.commands.get('fusionSwitch.showReport')(vscode.Uri.file(path));
    const said = JSON.stringify([report, recorded.messages]);
    assert.doesNotMatch(said, /not open/, said);

    // the palette passes nothing: the job is asked for; a closed question runs nothing
    const bisect = recorded.commands.get('fusionSwitch.bisect');
    assert.equal(await bisect(), undefined);
    assert.match(recorded.questions.join('\n'), /Bisect fusion rules/);
    const fired = { SoftmaxFusionPass: { effect_times: '1', match_times: '1' } };
    writeFileSync(join(folder, 'fusion_result.json'), JSON.stringify({ session_and_graph_id_0_0: { graph_fusion: fired } }));
    const fakeJob = join(repoRoot, 'tests', 'cli', 'fake_job.py');
    answers.inputBox = `FAKE_GUILTY=SoftmaxFusionPass '${python}' '${fakeJob}' {cfg}`;
    answers.openDialog = undefined; // cancelled: the fusion_result.json next to the file
    const result = await bisect(vscode.Uri.file(path));
    assert.deepEqual(result?.guilty?.map((g) => g.rule), ['SoftmaxFusionPass'], JSON.stringify(result));
  });
});

// The recipe's edits reach VS Code as workspace/applyEdit, which it applies to the buffer and
// never saves; the server said "all fusion is off, build" of a file left unchanged on disk (a
// review). A configuration without unsaved changes is saved after the edit, and told so.
const USER = `{
  "Switch": {
    "GraphFusion": {
      "AvgPoolFusionPass": "off"
    }
  }
}
`;

async function openWithServer(fake, folder) {
  const path = join(folder, 'fusion_switch.cfg');
  writeFileSync(path, USER);
  await until(() => fake.recorded.commands.has('fusionSwitch.allOff'), 'the server\'s commands');
  const document = fake.open(path, 'fusion-switch', USER);
  return { path, document };
}

describe('recipe edits from VS Code', { skip }, () => {
  test('an edit to a file without unsaved changes is saved; one with them is left', async () => {
    const { fake, extension, folder } = await activate({ 'fusionSwitch.server.pythonPath': python });
    running.push(extension);
    const { recorded } = fake;
    const { path, document } = await openWithServer(fake, folder);
    const allOff = await recorded.commands.get('fusionSwitch.allOff')({ confirmed: true });
    assert.equal(allOff?.saved, true, JSON.stringify([allOff, recorded.messages]));
    assert.equal(document.isDirty, false);
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')).Switch.GraphFusion, { ALL: 'off' });
    assert.match(recorded.messages.at(-1)[1], /all fusion is off in fusion_switch\.cfg \(saved\)/);

    // the user types without saving: restore replaces the buffer and leaves saving to them
    document.replaceText(document.getText().replace('"ALL": "off"', '"ALL": "on"'));
    const onDisk = readFileSync(path, 'utf8');
    const restored = await recorded.commands.get('fusionSwitch.restore')({ force: true });
    assert.equal(restored?.saved, false, JSON.stringify([restored, recorded.messages]));
    assert.equal(document.getText(), USER);
    assert.equal(readFileSync(path, 'utf8'), onDisk, 'not saved over the user\'s unsaved edits');
    assert.match(recorded.messages.at(-1)[1], /in the editor only: save fusion_switch\.cfg/);
  });

  test('Restore Configuration asks which version when the history holds several', async () => {
    const { fake, extension, folder } = await activate({ 'fusionSwitch.server.pythonPath': python });
    running.push(extension);
    const { recorded, answers } = fake;
    const { document } = await openWithServer(fake, folder);
    await recorded.commands.get('fusionSwitch.allOff')({ confirmed: true });
    const restore = recorded.commands.get('fusionSwitch.restore');
    assert.equal((await restore())?.applied, true); // one version: nothing to choose
    assert.equal(recorded.picks.length, 0);
    assert.equal(document.getText(), USER);

    answers.quickPick = () => undefined; // closed: nothing is restored
    assert.equal(await restore(), undefined);
    assert.equal(document.getText(), USER);
    const [{ items }] = recorded.picks;
    assert.deepEqual(items.map((i) => i.version), [1, 2]); // the default first
    assert.match(items[0].label, /Before change 1: all fusion off/);
    assert.match(items[0].detail, /Default/);

    answers.quickPick = (shown) => shown.find((i) => i.version === 2); // before the restore
    const chosen = await restore();
    assert.equal(chosen?.version, 2, JSON.stringify(chosen));
    assert.match(document.getText(), /"ALL": "off"/);
  });
});
