// The packaged bundle (dist/extension.js) activated against a stand-in `vscode` module
// (test/fakeVscode.cjs): it starts the real server through vscode-languageclient, forwards the
// target, syncs a fusion_switch.cfg, receives the server's diagnostics and runs its commands;
// when no server can start, the user gets the error with the fix.
// Python: $FUSION_SWITCH_PYTHON, else the repository's .venv/bin/python.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import Module, { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, afterEach, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

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

/** Loads a fresh copy of the bundle wired to a new fake `vscode`, and activates it.
 * `folders`: the workspace folders with values of their own (default: one new folder);
 * `options`: more for the fake (`remoteName`). */
async function activate(settings, folders, options = {}) {
  const folder = folders ? folders[0].path : temporaryFolder('fusion-switch-vscode-');
  const fake = createFake({ settings: { ...defaults(), ...settings }, folder, folders, ...options });
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
    assert.deepEqual(params.capabilities.experimental.fusionSwitch, {
      statusNotification: 'fusionSwitch/status',
      compareChoices: true, // the step, rank or iteration is asked with a quick pick here
    });
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

const UB = `{
  "Switch": {
    "GraphFusion": {"ALL": "on"},
    "UBFusion": {"ALL": "on"}
  }
}
`;
const UB_CODE = 'ub-unsupported-on-target';

describe('multi-root windows', { skip }, () => {
  // A review: the extension pushed the active folder's settings for the whole window (folder B
  // checked with folder A's target; Compare on B with A's paths), and Select Target wrote the
  // workspace's value, not the active configuration's folder's.
  test("each folder's configuration is checked with its folder's settings; Select Target writes that folder", async () => {
    const root = temporaryFolder('fusion-switch-multiroot-');
    const [a, b] = [join(root, 'projA'), join(root, 'projB')];
    for (const folder of [a, b]) {
      mkdirSync(folder);
      writeFileSync(join(folder, 'fusion_switch.cfg'), UB);
    }
    const { fake, extension } = await activate(
      { 'fusionSwitch.server.pythonPath': python, 'fusionSwitch.trace.server': 'verbose' },
      [
        { path: a, settings: { 'fusionSwitch.target': 'Atlas 350' } },
        { path: b, settings: { 'fusionSwitch.target': 'Ascend910B1' } },
      ],
    );
    running.push(extension);
    const { recorded, answers } = fake;
    const initialize = recorded.log.find((l) => l.includes("Sending request 'initialize"));
    const params = JSON.parse(initialize.slice(initialize.indexOf('Params: ') + 8));
    // the window's values, not the first folder's
    assert.equal(params.initializationOptions.fusionSwitch.target, '');

    const codes = (document) =>
      (recorded.diagnostics.get(document.uri.toString()) ?? []).map((d) => d.code?.value ?? d.code);
    const docB = fake.open(join(b, 'fusion_switch.cfg'), 'fusion-switch', UB);
    const docA = fake.open(join(a, 'fusion_switch.cfg'), 'fusion-switch', UB); // A is active
    await until(() => codes(docA).includes(UB_CODE), "A's diagnostics for Atlas 350");
    await until(() => codes(docB).length, "B's diagnostics");
    await new Promise((r) => setTimeout(r, 500)); // any later publication for B
    assert.ok(!codes(docB).includes(UB_CODE), JSON.stringify(codes(docB)));
    const pushed = recorded.log.filter((l) => l.includes("Sending notification 'workspace/didChangeConfiguration'"));
    assert.ok(!pushed.some((l) => l.includes('Atlas 350')), pushed.join('\n'));

    fake.show(docB);
    const status = recorded.statusItems.find((item) => item.id === 'fusionSwitch.status');
    await until(() => /910B/.test(status.text), "B's target in the status bar");
    answers.quickPick = 'Ascend950PR_9599';
    await recorded.commands.get('fusionSwitch.selectTarget')();
    assert.deepEqual(recorded.updates.at(-1), {
      key: 'fusionSwitch.target',
      value: 'Ascend950PR_9599',
      target: fake.vscode.ConfigurationTarget.WorkspaceFolder,
      folder: b,
    });
    // told that settings changed, the server asks B's folder again
    await until(() => codes(docB).includes(UB_CODE), "B's diagnostics for its new target");
    fake.show(docA);
    await until(() => /Atlas 350/.test(status.text), "A's target in the status bar");
  });
});

/** A generated comparison case whose dump folders hold ranks 0 and 1 (1 a copy of 0). */
function caseWithTwoRanks(root) {
  const code = `
import json, shutil, sys
from fusion_switch.synth.generator import generate_case
case = generate_case(sys.argv[1], n_ops=40)
roots = {}
for side, leaf in (("on", case.on_dump), ("off", case.off_dump)):
    rank0 = leaf.parents[2]
    shutil.copytree(rank0, rank0.parent / "1")
    roots[side] = str(rank0.parents[1])
print(json.dumps({"onDump": roots["on"], "offDump": roots["off"], "onGraph": str(case.on_graph), "offGraph": str(case.off_graph)}))
`;
  return JSON.parse(execFileSync(python, ['-c', code, join(root, 'case')], { encoding: 'utf8' }));
}

describe('compare with several ranks', { skip }, () => {
  // a review: the editor's comparison could not name a rank, yet was told to "pass --rank R"
  test('asks which rank with a quick pick and compares that one', async () => {
    const root = temporaryFolder('fusion-switch-ranks-');
    const inputs = caseWithTwoRanks(root);
    const settings = { 'fusionSwitch.server.pythonPath': python };
    for (const [key, value] of Object.entries(inputs)) settings[`fusionSwitch.compare.${key}`] = value;
    const { fake, extension, folder } = await activate(settings);
    running.push(extension);
    const { recorded, answers } = fake;
    const path = join(folder, 'fusion_switch.cfg');
    writeFileSync(path, CFG);
    fake.open(path, 'fusion-switch', CFG);

    answers.quickPick = undefined; // closed: the server's message, naming the setting
    let result = await recorded.commands.get('fusionSwitch.compare')();
    assert.deepEqual(result.choose, { rank: ['0', '1'] }, JSON.stringify(result));
    assert.match(recorded.questions.at(-1), /compare which rank/);
    await until(() => recorded.messages.some(([, text]) => /fusionSwitch\.compare\.rank/.test(text)), 'the message');
    assert.equal(recorded.messages.filter(([, text]) => /fusionSwitch\.compare\.rank/.test(text)).length, 1);

    answers.quickPick = '1';
    result = await recorded.commands.get('fusionSwitch.compare')();
    assert.ok(result && 'verdict' in result, JSON.stringify(result));
  });
});

describe('Show Report', { skip }, () => {
  // a review: over Remote-SSH the report's remote path went to the local browser, which could
  // not open it, and VS Code answered success
  for (const remoteName of ['ssh-remote', undefined]) {
    test(`in a ${remoteName ? 'remote' : 'local'} window`, async () => {
      const root = temporaryFolder('fusion-switch-report-');
      const inputs = caseWithTwoRanks(root);
      const settings = { 'fusionSwitch.server.pythonPath': python, 'fusionSwitch.compare.rank': '0' };
      for (const [key, value] of Object.entries(inputs)) settings[`fusionSwitch.compare.${key}`] = value;
      const { fake, extension, folder } = await activate(settings, undefined, { remoteName });
      running.push(extension);
      const { recorded } = fake;
      const path = join(folder, 'fusion_switch.cfg');
      writeFileSync(path, CFG);
      fake.open(path, 'fusion-switch', CFG);
      const compared = await recorded.commands.get('fusionSwitch.compare')();
      assert.ok(compared && compared.report, JSON.stringify(compared));

      const shown = await recorded.commands.get('fusionSwitch.showReport')();
      assert.equal(shown.shown, true, JSON.stringify(shown));
      // the server says where it is either way
      await until(() => recorded.messages.some(([, text]) => text.includes(compared.report)), 'the path');
      if (remoteName) {
        assert.deepEqual(recorded.external, []);
        const [panel] = recorded.webviews;
        assert.equal(panel.options.enableScripts, false);
        assert.match(panel.webview.html, /<head><meta http-equiv="Content-Security-Policy" content="default-src 'none'/);
        assert.match(panel.webview.html, /fusion-switch comparison/);
        await recorded.commands.get('fusionSwitch.showReport')();
        assert.equal(recorded.webviews.length, 1, 'the panel is reused');
        assert.equal(panel.revealed, 2);
      } else {
        assert.deepEqual(recorded.external, [pathToFileURL(compared.report).href]);
        assert.deepEqual(recorded.webviews, []);
      }
    });
  }
});

describe('a running bisection', { skip }, () => {
  // a review: its progress showed only in the status bar, with no Cancel button, and a change
  // of fusionSwitch.server.* restarted the server under it, killing it without a word
  test('shows a notification whose Cancel stops it; a server setting changed meanwhile waits for it', async () => {
    const { fake, extension, folder } = await activate({ 'fusionSwitch.server.pythonPath': python });
    running.push(extension);
    const { recorded, answers, vscode } = fake;
    const path = join(folder, 'fusion_switch.cfg');
    writeFileSync(path, CFG);
    fake.open(path, 'fusion-switch', CFG);
    const fired = { SoftmaxFusionPass: { effect_times: '1', match_times: '1' } };
    writeFileSync(join(folder, 'fusion_result.json'), JSON.stringify({ session_and_graph_id_0_0: { graph_fusion: fired } }));
    const fakeJob = join(repoRoot, 'tests', 'cli', 'fake_job.py');
    const state = join(folder, 'job-state');
    answers.inputBox = `FAKE_MODE=slow FAKE_SLEEP=60 FAKE_STATE='${state}' '${python}' '${fakeJob}' {cfg}`;
    answers.openDialog = undefined;
    const bisection = recorded.commands.get('fusionSwitch.bisect')(vscode.Uri.file(path));
    const notification = await until(
      () =>
        recorded.progress.find(
          (p) => p.options.location === vscode.ProgressLocation.Notification && /bisect/i.test(p.options.title ?? ''),
        ),
      'the notification (the client shows the work-done progress in the status bar only)',
    );
    assert.equal(notification.options.cancellable, true);
    await until(() => existsSync(state), 'the job running');

    const starts = () => recorded.log.filter((l) => l.includes('Starting ')).length;
    const before = starts();
    await vscode.workspace.getConfiguration('fusionSwitch').update('server.pythonPath', python, 1);
    await until(() => recorded.messages.some(([, text]) => /bisection is running/.test(text)), 'the question');
    assert.equal(starts(), before, 'not restarted under the bisection');

    notification.cancel();
    const result = await bisection;
    assert.ok(recorded.executed.some(([id]) => id === 'fusionSwitch.cancelBisect'), JSON.stringify(recorded.executed));
    assert.ok(result && !result.error, JSON.stringify(result));
    assert.equal(readFileSync(path, 'utf8'), CFG, 'the file is put back');
    const runningAgain = () =>
      recorded.executed.filter(([id, key, value]) => id === 'setContext' && key === 'fusionSwitch.serverRunning' && value).length;
    const ran = runningAgain();
    await until(() => starts() > before, 'the restart once it ended');
    await until(() => runningAgain() > ran, 'the server running again');
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
