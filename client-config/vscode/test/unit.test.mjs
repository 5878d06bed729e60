// The extension's pure parts: which server to start, the status text, command arguments.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import Module, { builtinModules, createRequire } from 'node:module';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const { chooseServer, probe, resolveExecutable, serverCandidates, startFailureMessage } = require(
  '../src/serverCommand.js',
);
const { statusText } = require('../src/status.js');
const { commandArguments } = require('../src/commandArgs.js');
const { statusOfFolder, targetSettingLevel } = require('../src/scopes.js');
const { choiceQuestion, pendingChoice, withChoice } = require('../src/compareChoices.js');
const { REPORT_CSP, showsReportHere, withReportPolicy } = require('../src/report.js');
const { LONG_RUNS, restartQuestion } = require('../src/longRuns.js');
const { createRecipeSaver, editedUris } = require('../src/recipeEdits.js');
const { choosesVersion, restoreItems, withChosenVersion } = require('../src/restorePick.js');

const MODULE = ['-m', 'fusion_switch', 'serve'];

describe('serverCandidates', () => {
  const table = [
    {
      name: 'server.command wins over everything',
      settings: { command: ['/v/bin/fusion-switch', 'serve', '--log', 'x'], pythonPath: '/py' },
      python: '/ext/python',
      want: [['/v/bin/fusion-switch', ['serve', '--log', 'x'], true]],
    },
    {
      name: 'pythonPath runs the module',
      settings: { command: [], pythonPath: ' /opt/py/bin/python ' },
      python: '/ext/python',
      want: [['/opt/py/bin/python', MODULE, true]],
    },
    {
      name: 'Python extension interpreter, then PATH',
      settings: { command: [], pythonPath: '' },
      python: '/ext/python',
      want: [
        ['/ext/python', MODULE, false],
        ['fusion-switch', ['serve'], false],
      ],
    },
    {
      name: 'only PATH when nothing is configured',
      settings: {},
      python: undefined,
      want: [['fusion-switch', ['serve'], false]],
    },
    {
      name: 'an empty or non-string command is ignored',
      settings: { command: [''], pythonPath: 42 },
      python: undefined,
      want: [['fusion-switch', ['serve'], false]],
    },
  ];
  for (const { name, settings, python, want } of table) {
    test(name, () => {
      const got = serverCandidates(settings, python).map((c) => [c.command, c.args, c.explicit]);
      assert.deepEqual(got, want);
    });
  }
});

describe('chooseServer', () => {
  const auto = serverCandidates({}, '/ext/python');

  test('the first automatic candidate that passes its probe wins', async () => {
    const probed = [];
    const { server, failures } = await chooseServer(auto, async (c) => {
      probed.push(c.command);
      return c.command === '/ext/python' ? 'No module named fusion_switch' : undefined;
    });
    assert.equal(server.command, 'fusion-switch');
    assert.deepEqual(probed, ['/ext/python', 'fusion-switch']);
    assert.deepEqual(failures.map((f) => f.error), ['No module named fusion_switch']);
  });

  test('an explicit setting that fails is reported, never replaced by a fallback', async () => {
    const explicit = serverCandidates({ pythonPath: '/nowhere/python' }, '/ext/python');
    const { server, failures } = await chooseServer(explicit, async () => 'not found');
    assert.equal(server, undefined);
    assert.deepEqual(failures.map((f) => f.candidate.setting), ['fusionSwitch.server.pythonPath']);
    assert.match(startFailureMessage(failures), /setting fusionSwitch\.server\.pythonPath \(not found\)/);
  });

  test('nothing works: the message names each attempt and the install command', async () => {
    const { server, failures } = await chooseServer(auto, async (c) => `${c.command}: not found`);
    assert.equal(server, undefined);
    const message = startFailureMessage(failures);
    assert.match(message, /the Python extension interpreter \(\/ext\/python: not found\)/);
    assert.match(message, /`fusion-switch` on PATH \(fusion-switch: not found\)/);
    assert.match(message, /pip install fusion-switch/);
    assert.match(message, /fusionSwitch\.server\.pythonPath/);
  });

  test('probe runs the real executable: missing, failing and working', async () => {
    const missing = await probe({ command: '/nonexistent/python3', args: MODULE });
    assert.equal(missing, '/nonexistent/python3: not found or not executable');
    const failing = await probe({ command: process.execPath, args: ['serve'] }, (cmd, args, opts, cb) =>
      require('node:child_process').execFile(cmd, ['-e', 'process.exit(3)'], opts, cb),
    );
    assert.match(failing, /^.+ --version: /);
    const working = await probe({ command: process.execPath, args: ['serve'] });
    assert.equal(working, undefined); // node --version succeeds
    // A custom server.command is only checked for an executable: its arguments are the user's.
    const custom = { command: 'node', args: ['--some', 'server.js'], explicit: true };
    assert.equal(await probe(custom, () => assert.fail('ran')), undefined);
  });

  test('resolveExecutable follows PATH and rejects non-executables', () => {
    assert.equal(resolveExecutable('node', { PATH: dirname(process.execPath) }), join(dirname(process.execPath), 'node'));
    assert.equal(resolveExecutable('node', { PATH: '/nonexistent' }), undefined);
    assert.equal(resolveExecutable(process.execPath), process.execPath);
    assert.equal(resolveExecutable(fileURLToPath(new URL('../package.json', import.meta.url))), undefined);
  });
});

describe('statusText', () => {
  // the server counts per open configuration (`files`); the status bar shows the active one's
  const U = 'file:///w/modelA/fusion_switch.cfg';
  const counts = (entry) => ({ files: [{ uri: 'file:///w/modelB/fusion_switch.cfg', suspects: 9, proven: 9 }, { uri: U, ...entry }] });
  const table = [
    [undefined, '', '$(circuit-board) no target', /waiting for the server/],
    [undefined, 'Ascend950PR_9599', '$(circuit-board) Ascend950PR_9599', /target: Ascend950PR_9599/],
    [{ target: null, catalogue: 'built-in (674 rules)' }, '', '$(circuit-board) no target', /Catalogue: built-in \(674 rules\)/],
    [{ target: 'Atlas 350', catalogue: 'built-in', ...counts({ suspects: 2 }) }, 'x', '$(circuit-board) Atlas 350 $(warning) 2', /Suspected rules from the last comparison: 2/],
    [{ target: { given: 'Ascend910B1', product: 'Atlas A2' }, catalogue: { name: 'cann' } }, '', '$(circuit-board) Ascend910B1', /Catalogue: cann/],
    [{ target: 'A3', catalogue: 'c', ...counts({ suspects: 0 }) }, '', '$(circuit-board) A3', /last comparison: 0/],
    // proven by replay apart from the labelled guesses of a run without it
    [{ target: 'A3', catalogue: 'c', ...counts({ suspects: 3, proven: 1 }) }, '', '$(circuit-board) A3 $(warning) 1 $(question) 2', /3 \(1 proven by replay, 2 not proven\)/],
    [{ target: 'A3', catalogue: 'c', ...counts({ suspects: 2, proven: 0 }) }, '', '$(circuit-board) A3 $(question) 2', /2 \(0 proven by replay, 2 not proven\)/],
    [{ target: 'A3', catalogue: 'c', ...counts({ suspects: 1, proven: 1 }) }, '', '$(circuit-board) A3 $(warning) 1', /1 \(1 proven by replay, 0 not proven\)/],
    // another file's comparison is not this file's (a review: model A's count showed on B)
    [{ target: 'A3', catalogue: 'c', files: [{ uri: 'file:///w/modelB/fusion_switch.cfg', suspects: 2, proven: 2 }] }, '', '$(circuit-board) A3', /^(?![\s\S]*Suspected)/],
    // a count not said to be this file's (an older server's latest comparison) is not shown
    [{ target: 'A3', catalogue: 'c', suspects: 2, proven: 2 }, '', '$(circuit-board) A3', /^(?![\s\S]*Suspected)/],
  ];
  for (const [status, configured, text, tooltip] of table) {
    test(`${JSON.stringify(status)} + ${JSON.stringify(configured)}`, () => {
      const got = statusText(status, configured, U);
      assert.equal(got.text, text);
      assert.match(got.tooltip, tooltip);
    });
  }
});

describe('recipe edits are saved when the file had no unsaved changes', () => {
  const A = 'file:///w/a/fusion_switch.cfg';
  const B = 'file:///w/b/fusion_switch.cfg';
  const doc = (uri, isDirty) => {
    const d = { uri: { toString: () => uri }, isDirty, saved: 0 };
    d.save = async () => {
      d.saved += 1;
      d.isDirty = false;
      return true;
    };
    return d;
  };
  const edit = (uri) => ({ edit: { documentChanges: [{ textDocument: { uri, version: 1 }, edits: [] }] } });
  const applied = (document) => async () => {
    document.isDirty = true; // VS Code applies the edit to the buffer, unsaved
    return { applied: true };
  };

  test('editedUris reads both WorkspaceEdit shapes', () => {
    assert.deepEqual(editedUris(edit(A).edit), [A]);
    assert.deepEqual(editedUris({ changes: { [B]: [] } }), [B]);
    assert.deepEqual(editedUris(undefined), []);
  });

  for (const [name, command, dirtyBefore, accepted, saves] of [
    ['all off on a clean file is saved', 'fusionSwitch.allOff', false, true, 1],
    ['apply suspects on a clean file is saved', 'fusionSwitch.applySuspects', false, true, 1],
    ['restore on a clean file is saved', 'fusionSwitch.restore', false, true, 1],
    ["a file with the user's unsaved edits is not saved", 'fusionSwitch.allOff', true, true, 0],
    ['an edit the editor refused saves nothing', 'fusionSwitch.allOff', false, false, 0],
    ['other commands save nothing', 'fusionSwitch.bisect', false, true, 0],
  ]) {
    test(name, async () => {
      const a = doc(A, dirtyBefore);
      const saver = createRecipeSaver({ textDocuments: [a] });
      await saver.around(command, [{ cfgUri: A }], () =>
        saver.handleApplyEdit(edit(A), accepted ? applied(a) : async () => ({ applied: false })),
      );
      assert.equal(a.saved, saves);
    });
  }

  test('only the commanded file is saved, and only while its command runs', async () => {
    const a = doc(A, false);
    const b = doc(B, false);
    const saver = createRecipeSaver({ textDocuments: [a, b] });
    await saver.around('fusionSwitch.allOff', [{ cfgUri: A }], () => saver.handleApplyEdit(edit(B), applied(b)));
    assert.equal(b.saved, 0);
    await saver.handleApplyEdit(edit(A), applied(a)); // no command of ours running
    assert.equal(a.saved, 0);
  });
});

describe('restore picks a version', () => {
  const listed = {
    versions: [
      { version: 2, label: 'apply suspects: R (GraphFusion) off', who: 'editor', when: '2026-12-07 10:00:00', default: false },
      { version: 1, label: 'all fusion off', who: 'cli', when: '2026-12-07 09:00:00', default: true },
    ],
    default: 1,
  };

  test('asks only when no version is given', () => {
    assert.equal(choosesVersion('fusionSwitch.restore', [{ cfgUri: 'u' }]), true);
    assert.equal(choosesVersion('fusionSwitch.restore', [{ cfgUri: 'u', version: 2 }]), false);
    assert.equal(choosesVersion('fusionSwitch.restore', [{ cfgUri: 'u', list: true }]), false);
    assert.equal(choosesVersion('fusionSwitch.allOff', [{ cfgUri: 'u' }]), false);
  });

  test('items: the default first, each saying what it brings back', () => {
    const items = restoreItems(listed);
    assert.deepEqual(items.map((i) => i.version), [1, 2]);
    assert.equal(items[0].label, 'Before change 1: all fusion off');
    assert.match(items[0].detail, /Default/);
    assert.equal(items[1].detail, undefined);
    assert.equal(items[1].description, 'editor · 2026-12-07 10:00:00');
    assert.equal(restoreItems({ versions: [listed.versions[1]] }), undefined); // nothing to choose
    assert.equal(restoreItems({ error: 'no history' }), undefined);
  });

  test('the chosen version is passed on; a closed pick restores nothing', async () => {
    const list = async (args) => {
      assert.deepEqual(args, [{ cfgUri: 'u', list: true }]);
      return listed;
    };
    const args = [{ cfgUri: 'u' }];
    assert.deepEqual(await withChosenVersion(args, list, async (items) => items[1]), [{ cfgUri: 'u', version: 2 }]);
    assert.equal(await withChosenVersion(args, list, async () => undefined), undefined);
    assert.equal(await withChosenVersion(args, async () => ({ versions: [] }), async () => assert.fail('asked')), args);
  });
});

describe('commandArguments', () => {
  const uri = (value) => (value && value.isUri ? value.text : undefined);
  const table = [
    ['palette, active cfg', [], 'file:///w/fusion_switch.cfg', [{ cfgUri: 'file:///w/fusion_switch.cfg' }]],
    ['palette, no cfg open', [], undefined, [{}]],
    ['menu click on a file', [{ isUri: true, text: 'file:///w/b.fusion_switch.cfg' }], 'file:///w/a.cfg', [{ cfgUri: 'file:///w/b.fusion_switch.cfg' }]],
    ['server-built arguments stay', [{ cfgUri: 'file:///x', rules: ['R'] }], 'file:///w/a.cfg', [{ cfgUri: 'file:///x', rules: ['R'] }]],
    ['object without cfgUri gets the active one', [{ onDump: 'd' }], 'file:///w/a.cfg', [{ onDump: 'd', cfgUri: 'file:///w/a.cfg' }]],
    ['non-object arguments stay', ['x', 1], 'file:///w/a.cfg', ['x', 1]],
  ];
  for (const [name, args, active, want] of table) {
    test(name, () => assert.deepEqual(commandArguments(args, uri, active), want));
  }
});

describe('dist/extension.js', () => {
  const bundle = fileURLToPath(new URL('../dist/extension.js', import.meta.url));

  test('loads with only `vscode` external and exports activate/deactivate', { skip: !existsSync(bundle) && 'not built: npm run build' }, () => {
    // Any property of this stand-in is another stand-in, callable and constructible; it is
    // enough for module-level code, which is all that runs at load time.
    const standIn = (path) =>
      new Proxy(function () {}, {
        get: (_target, prop) => (prop === 'then' ? undefined : standIn(`${path}.${String(prop)}`)),
        apply: () => standIn(`${path}()`),
        construct: () => standIn(`new ${path}`),
      });
    const requests = [];
    const load = Module._load;
    Module._load = function (request, ...rest) {
      requests.push(request);
      return request === 'vscode' ? standIn('vscode') : load.call(this, request, ...rest);
    };
    try {
      const extension = require(bundle);
      assert.equal(typeof extension.activate, 'function');
      assert.equal(typeof extension.deactivate, 'function');
    } finally {
      Module._load = load;
    }
    const external = requests.filter((r) => !r.startsWith('node:') && !builtinModules.includes(r));
    assert.deepEqual([...new Set(external)].filter((r) => r !== bundle), ['vscode']);
  });
});

describe('confirmationFor', () => {
  const { confirmationFor } = require('../src/confirm.js');
  const uri = 'file:///w/my%20model/fusion_switch.cfg';
  test('allOff and applySuspects ask, naming the file', () => {
    for (const command of ['fusionSwitch.allOff', 'fusionSwitch.applySuspects']) {
      const question = confirmationFor(command, [{ cfgUri: uri }]);
      assert.ok(question, command);
      assert.match(question.message, /fusion_switch\.cfg\?$/);
      assert.ok(question.action && question.detail);
    }
  });
  test('other commands and already-confirmed calls do not ask', () => {
    assert.equal(confirmationFor('fusionSwitch.compare', [{ cfgUri: uri }]), undefined);
    assert.equal(confirmationFor('fusionSwitch.restore', [{ cfgUri: uri }]), undefined);
    assert.equal(confirmationFor('fusionSwitch.allOff', [{ cfgUri: uri, confirmed: true }]), undefined);
  });
  test('without a file it still asks', () => {
    assert.match(confirmationFor('fusionSwitch.allOff', [{}]).message, /the active configuration/);
  });
});

describe('targetSettingLevel', () => {
  // a review: in a multi-root window Select Target wrote the workspace's value, which every
  // folder without its own then took
  const table = [
    [{ folders: 2, inFolder: true }, 'WorkspaceFolder'],
    [{ folders: 2, inFolder: false }, 'Workspace'],
    [{ folders: 1, inFolder: true }, 'Workspace'],
    [{ folders: 1, inFolder: true, folderValue: 'Atlas 350' }, 'WorkspaceFolder'],
    [{ folders: 1, inFolder: true, folderValue: '' }, 'WorkspaceFolder'],
    [{ folders: 0, inFolder: false }, 'Global'],
  ];
  for (const [where, want] of table) {
    test(JSON.stringify(where), () => assert.equal(targetSettingLevel(where), want));
  }
});

describe('statusOfFolder', () => {
  const status = {
    target: 'Atlas A2',
    catalogue: 'built-in',
    files: [{ uri: 'file:///b/fusion_switch.cfg', suspects: 1, proven: 1 }],
    folders: { 'file:///b': { target: 'Atlas 350', catalogue: 'built-in, team' } },
  };
  test("a folder with settings of its own shows its target and catalogue", () => {
    const got = statusOfFolder(status, 'file:///b');
    assert.equal(got.target, 'Atlas 350');
    assert.equal(got.catalogue, 'built-in, team');
    assert.deepEqual(got.files, status.files); // each file's counts, whichever folder
  });
  test("another folder, or none, shows the window's", () => {
    assert.equal(statusOfFolder(status, 'file:///a'), status);
    assert.equal(statusOfFolder(status, undefined), status);
    assert.equal(statusOfFolder(undefined, 'file:///b'), undefined);
  });
});

describe('compare choices', () => {
  const table = [
    [{ error: 'x', choose: { rank: ['0', '1'] } }, { key: 'rank', values: ['0', '1'] }],
    [{ error: 'x', choose: { iteration: ['3', '10', 'all'] } }, { key: 'iteration', values: ['3', '10', 'all'] }],
    [{ error: 'x', choose: { step: ['0', '1'] } }, { key: 'step', values: ['0', '1'] }], // a training step
    [{ verdict: 'no suspect' }, undefined],
    [{ error: 'x' }, undefined],
    [{ error: 'x', choose: { rank: [] } }, undefined],
    [{ error: 'x', choose: { rank: [0, 1] } }, undefined], // not as the server sends them
    [{ error: 'x', choose: { other: ['a'] } }, undefined],
    [undefined, undefined],
  ];
  for (const [result, want] of table) {
    test(`pendingChoice(${JSON.stringify(result)})`, () => assert.deepEqual(pendingChoice(result), want));
  }
  test('the question names what is asked and the setting that answers it for good', () => {
    const question = choiceQuestion({ key: 'rank', values: ['0', '1'] });
    assert.match(question.title, /rank \(device id, or folders\/device id\)/);
    assert.match(question.placeHolder, /fusionSwitch\.compare\.rank/);
    assert.deepEqual(question.items.map((i) => i.label), ['0', '1']);
  });
  test('a step is asked as a training step, with its setting', () => {
    const question = choiceQuestion({ key: 'step', values: ['0', '1'] });
    assert.match(question.title, /training step/);
    assert.match(question.placeHolder, /fusionSwitch\.compare\.step/);
    assert.deepEqual(question.items.map((i) => i.label), ['0', '1']);
  });
  test('the value picked is added to the first argument', () => {
    assert.deepEqual(withChoice([{ cfgUri: 'file:///c' }], 'rank', '1'), [{ cfgUri: 'file:///c', rank: '1' }]);
    assert.deepEqual(withChoice([{ cfgUri: 'u', rank: '1' }], 'iteration', '5'), [{ cfgUri: 'u', rank: '1', iteration: '5' }]);
    assert.deepEqual(withChoice([{ cfgUri: 'u' }], 'step', '1'), [{ cfgUri: 'u', step: '1' }]);
  });
});

describe('the report in a remote window', () => {
  const report = { uri: 'file:///srv/p/.fusion-switch/fusion_switch.cfg.compare/report.html', external: true };
  const table = [
    [report, { remoteName: 'ssh-remote' }, true],
    [report, { web: true }, true], // code-server, vscode.dev: the browser is not the host
    [report, {}, false], // local: the default browser opens it
    [{ ...report, external: false }, { remoteName: 'ssh-remote' }, false],
    [{ ...report, uri: 'https://example.com/report.html' }, { remoteName: 'ssh-remote' }, false],
    [{ ...report, uri: 'file:///srv/p/summary.json' }, { remoteName: 'ssh-remote' }, false],
  ];
  for (const [params, where, want] of table) {
    test(`showsReportHere(${params.uri}, external ${params.external}, ${JSON.stringify(where)})`, () => {
      assert.equal(showsReportHere(params, where), want);
    });
  }
  test('the policy comes first in the head and lets no script run or anything load', () => {
    const html = withReportPolicy('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><script>x()</script></head><body>r</body></html>');
    assert.match(html, /^<!DOCTYPE html><html lang="en"><head><meta http-equiv="Content-Security-Policy"/);
    assert.ok(html.indexOf('Content-Security-Policy') < html.indexOf('<script>'));
    assert.match(REPORT_CSP, /default-src 'none'/);
    assert.doesNotMatch(REPORT_CSP, /script-src|unsafe-eval/);
    assert.match(withReportPolicy('just text'), /^<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy"[^>]*><\/head><body>just text/);
  });
});

describe('long commands', () => {
  test('compare and bisect each get a notification whose Cancel is their cancel command', () => {
    assert.equal(LONG_RUNS['fusionSwitch.compare'].cancel, 'fusionSwitch.cancelCompare');
    assert.equal(LONG_RUNS['fusionSwitch.bisect'].cancel, 'fusionSwitch.cancelBisect');
    const manifest = require('../package.json');
    const contributed = manifest.contributes.commands.map((c) => c.command);
    for (const [command, run] of Object.entries(LONG_RUNS)) {
      assert.ok(contributed.includes(command) && contributed.includes(run.cancel), command);
    }
  });
  const table = [
    [[], undefined],
    [['bisection'], /^Fusion Switch: a bisection is running; restart/],
    [['comparison'], /^Fusion Switch: a comparison is running; restart/],
    [['comparison', 'bisection'], /^Fusion Switch: a comparison and a bisection are running; restart/],
  ];
  for (const [kinds, want] of table) {
    test(`restartQuestion(${JSON.stringify(kinds)})`, () => {
      const question = restartQuestion(kinds);
      if (want === undefined) {
        assert.equal(question, undefined);
      } else {
        assert.match(question.message, want);
        assert.match(question.detail, /stops it/);
        assert.notEqual(question.now, question.later);
      }
    });
  }
});

describe('setting scopes', () => {
  // Chosen so that User, Workspace and folder values all apply in a remote (Remote-SSH,
  // code-server) window: `resource` is read from every layer and can differ per folder;
  // `machine-overridable` is for host paths (the interpreter on the NPU host); `window` for
  // the client-side trace.
  const want = {
    'fusionSwitch.target': 'resource',
    'fusionSwitch.catalogue.extraFiles': 'resource',
    'fusionSwitch.compare.onDump': 'resource',
    'fusionSwitch.compare.offDump': 'resource',
    'fusionSwitch.compare.onGraph': 'resource',
    'fusionSwitch.compare.offGraph': 'resource',
    'fusionSwitch.compare.output': 'resource',
    'fusionSwitch.compare.memoryBudget': 'machine-overridable',
    'fusionSwitch.compare.workers': 'machine-overridable',
    'fusionSwitch.compare.rank': 'resource',
    'fusionSwitch.compare.iteration': 'resource',
    'fusionSwitch.compare.step': 'resource',
    'fusionSwitch.server.command': 'machine-overridable',
    'fusionSwitch.server.pythonPath': 'machine-overridable',
    'fusionSwitch.trace.server': 'window',
  };
  test('every setting has its deliberate scope', () => {
    const pkg = require('../package.json');
    const got = Object.fromEntries(
      Object.entries(pkg.contributes.configuration.properties).map(([k, v]) => [k, v.scope]),
    );
    assert.deepEqual(got, want);
  });
});

describe('bundled server (platform-specific .vsix)', () => {
  const launcher = '/ext/bundled/launch.py';
  test('interpreters run the bundled launcher; python3 on PATH becomes a candidate', () => {
    const got = serverCandidates({ command: [], pythonPath: '' }, '/ext/python', launcher).map(
      (c) => [c.command, c.args],
    );
    assert.deepEqual(got, [
      ['/ext/python', [launcher]],
      ['python3', [launcher]],
      ['python', [launcher]],
      ['fusion-switch', ['serve']],
    ]);
  });
  test('the configured interpreter runs the bundled server', () => {
    const [only] = serverCandidates({ command: [], pythonPath: '/opt/py' }, undefined, launcher);
    assert.deepEqual([only.command, only.args, only.explicit], ['/opt/py', [launcher], true]);
  });
  test('the probe asks the launcher to --check', async () => {
    const calls = [];
    const run = (cmd, args, _opts, cb) => {
      calls.push([cmd, args]);
      cb(null, '', '');
    };
    const candidate = { command: process.execPath, args: [launcher], explicit: false };
    assert.equal(await probe(candidate, run), undefined);
    assert.deepEqual(calls, [[process.execPath, [launcher, '--check']]]);
  });
});
