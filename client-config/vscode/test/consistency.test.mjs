// Fails when the extension's package.json and the language server disagree.
//
// Starts the real server (`<python> -m fusion_switch serve`) over stdio with vscode-jsonrpc,
// reads `executeCommandProvider.commands`, and asks Python for `SETTINGS` and the known targets.
// Python: $FUSION_SWITCH_PYTHON, else the repository's .venv/bin/python.
// The schema checks need `scripts/package_vscode.sh` to have run (it copies the schema).
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
} from 'vscode-jsonrpc/node';

import { readVsix } from './vsix.mjs';

const require = createRequire(import.meta.url);
const { CLIENT_COMMANDS, CLIENT_SETTINGS, LANGUAGE_ID, SECTION } = require('../src/contract.js');

const extensionDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const repoRoot = resolve(extensionDir, '..', '..');
const python = process.env.FUSION_SWITCH_PYTHON || join(repoRoot, '.venv', 'bin', 'python');
const manifest = JSON.parse(readFileSync(join(extensionDir, 'package.json'), 'utf8'));
const contributes = manifest.contributes;
const contributedSettings = contributes.configuration.properties;
const contributedCommands = contributes.commands.map((c) => c.command);

/** JSON printed by a Python snippet run with the project's interpreter. */
function pythonJson(code) {
  return JSON.parse(execFileSync(python, ['-c', code], { encoding: 'utf8', cwd: repoRoot }));
}

const sorted = (items) => [...items].sort();
const difference = (a, b) => sorted(a.filter((x) => !b.includes(x)));

/** Starts the server, initializes it like VS Code would, and returns what it advertised. */
async function initializeServer() {
  const child = spawn(python, ['-m', 'fusion_switch', 'serve'], {
    cwd: repoRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolveExit) => child.on('exit', resolveExit));
  const connection = createMessageConnection(
    new StreamMessageReader(child.stdout),
    new StreamMessageWriter(child.stdin),
  );
  // Answer what a server may ask during start-up the way VS Code does.
  connection.onRequest((method, params) => {
    if (method === 'workspace/configuration') {
      return params.items.map(() => ({}));
    }
    return null;
  });
  connection.onNotification(() => {});
  connection.listen();
  const failure = exited.then((code) => {
    throw new Error(`server exited with ${code} before answering initialize:\n${stderr}`);
  });
  const result = await Promise.race([
    connection.sendRequest('initialize', {
      processId: process.pid,
      clientInfo: { name: 'Visual Studio Code', version: '1.91.0' },
      rootUri: pathToFileURL(repoRoot).href,
      workspaceFolders: [{ uri: pathToFileURL(repoRoot).href, name: 'fusion-switch' }],
      initializationOptions: { [SECTION]: { target: '' } },
      capabilities: {
        workspace: {
          configuration: true,
          didChangeConfiguration: { dynamicRegistration: true },
          executeCommand: { dynamicRegistration: true },
          workspaceEdit: { documentChanges: true },
          applyEdit: true,
        },
        textDocument: {
          synchronization: { didSave: true, dynamicRegistration: true },
          completion: { completionItem: { snippetSupport: true } },
          publishDiagnostics: { relatedInformation: true, codeDescriptionSupport: true },
        },
        window: { workDoneProgress: true, showDocument: { support: true } },
      },
    }),
    failure,
  ]);
  connection.sendNotification('initialized', {});
  const stop = async () => {
    try {
      await connection.sendRequest('shutdown');
      connection.sendNotification('exit');
    } catch {
      // already gone
    }
    const timer = setTimeout(() => child.kill(), 5000);
    await exited;
    clearTimeout(timer);
    connection.dispose();
  };
  return { result, stop };
}

describe('package.json agrees with the language server', () => {
  let serverCommands;
  let stopServer;

  before(async () => {
    const { result, stop } = await initializeServer();
    stopServer = stop;
    serverCommands = result.capabilities.executeCommandProvider?.commands ?? [];
  });

  after(async () => {
    await stopServer?.();
  });

  test('every command the server lists is contributed', () => {
    assert.deepEqual(
      difference(serverCommands, contributedCommands),
      [],
      'commands in executeCommandProvider.commands but not in contributes.commands',
    );
  });

  test('every contributed command is registered by the server or by the extension', () => {
    const serverSide = contributedCommands.filter((c) => !CLIENT_COMMANDS.includes(c));
    assert.deepEqual(
      difference(serverSide, serverCommands),
      [],
      'contributed commands that the server does not list (and src/contract.js does not ' +
        'mark as client-only)',
    );
    assert.deepEqual(
      difference(CLIENT_COMMANDS, contributedCommands),
      [],
      'client-only commands not contributed',
    );
    assert.deepEqual(
      sorted(CLIENT_COMMANDS.filter((c) => serverCommands.includes(c))),
      [],
      'commands marked client-only that the server registers too (VS Code would refuse the ' +
        'second registration)',
    );
  });

  test('every contributed command has a title and the Fusion Switch category', () => {
    for (const command of contributes.commands) {
      assert.match(command.command, /^fusionSwitch\.[a-zA-Z]+$/);
      assert.ok(command.title, `${command.command} has no title`);
      assert.equal(command.category, 'Fusion Switch', `${command.command} category`);
    }
  });
});

describe('settings agree with fusion_switch.lsp.settings.SETTINGS', () => {
  const serverSettings = pythonJson(
    'import json; from fusion_switch.lsp.settings import SETTINGS; print(json.dumps(SETTINGS))',
  );
  const contributed = Object.keys(contributedSettings);

  test('every contributed setting is read by the server or by the extension', () => {
    const serverSide = contributed.filter((key) => !CLIENT_SETTINGS.includes(key));
    assert.deepEqual(
      difference(serverSide, Object.keys(serverSettings)),
      [],
      'contributed settings missing from SETTINGS (and not client-only in src/contract.js)',
    );
  });

  test('every setting in SETTINGS is contributed', () => {
    assert.deepEqual(
      difference(Object.keys(serverSettings), contributed),
      [],
      'SETTINGS keys missing from contributes.configuration',
    );
    assert.deepEqual(difference(CLIENT_SETTINGS, contributed), [], 'client-only settings');
  });

  test('type, default and enum are the same on both sides', () => {
    for (const [key, declared] of Object.entries(serverSettings)) {
      const schema = contributedSettings[key];
      if (!schema) {
        continue; // reported by the test above
      }
      assert.equal(schema.type, declared.type, `${key}: type`);
      assert.deepEqual(schema.default, declared.default, `${key}: default`);
      if (declared.enum !== undefined || schema.enum !== undefined) {
        assert.deepEqual(schema.enum, declared.enum, `${key}: enum`);
      }
      assert.ok(schema.description || schema.markdownDescription, `${key}: no description`);
    }
  });

  test('fusionSwitch.target suggests exactly the known targets, each described', () => {
    const known = pythonJson(
      'import json; from fusion_switch.catalogue import known_target_names; ' +
        'print(json.dumps(known_target_names()))',
    );
    const target = contributedSettings[`${SECTION}.target`];
    assert.equal(target.type, 'string');
    assert.equal(target.enum, undefined, 'free strings must stay allowed (no enum)');
    assert.deepEqual(target.examples, known);
    assert.equal(target.enumDescriptions.length, known.length);
  });
});

describe('language and schema contributions', () => {
  const generated = join(repoRoot, 'schemas', 'fusion_switch.schema.json');

  test('the fusion-switch language and jsonValidation cover the same file names', () => {
    const language = contributes.languages.find((l) => l.id === LANGUAGE_ID);
    assert.ok(language, `language ${LANGUAGE_ID} not contributed`);
    assert.ok(existsSync(join(extensionDir, language.configuration)), 'language configuration');
    const [validation] = contributes.jsonValidation;
    assert.deepEqual(sorted(validation.fileMatch), sorted(language.filenamePatterns));
  });

  test('the jsonValidation schema was packaged and equals the generated one byte for byte', () => {
    assert.ok(existsSync(generated), `${generated} missing: run scripts/generate_schema.py`);
    const url = contributes.jsonValidation[0].url;
    const packaged = join(extensionDir, url);
    assert.ok(existsSync(packaged), `${packaged} missing: run scripts/package_vscode.sh`);
    assert.ok(readFileSync(packaged).equals(readFileSync(generated)), `${url} is stale`);
    const vsix = join(extensionDir, 'out', `fusion-switch-${manifest.version}.vsix`);
    assert.ok(existsSync(vsix), `${vsix} missing: run scripts/package_vscode.sh`);
    const entry = readVsix(vsix).find((e) => e.name === join('extension', url));
    assert.ok(entry, `${vsix} lacks extension/${url}`);
    assert.ok(entry.read().equals(readFileSync(generated)), `${url} in the .vsix is stale`);
  });

  test('menus and the command palette name contributed commands only', () => {
    for (const [menu, items] of Object.entries(contributes.menus)) {
      for (const item of items) {
        assert.ok(contributedCommands.includes(item.command), `${menu}: ${item.command}`);
      }
    }
    const palette = contributes.menus.commandPalette.map((item) => item.command);
    assert.deepEqual(sorted(palette), sorted(contributedCommands), 'palette entries');
  });

  test('the extension activates on the language and on every command', () => {
    assert.ok(manifest.activationEvents.includes(`onLanguage:${LANGUAGE_ID}`));
    for (const command of contributedCommands) {
      assert.ok(manifest.activationEvents.includes(`onCommand:${command}`), command);
    }
  });
});
