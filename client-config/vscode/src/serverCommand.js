// Which command starts the language server. Plain Node (no `vscode` import) so it is unit-tested.
//
// Order: fusionSwitch.server.command, then fusionSwitch.server.pythonPath (explicit: the only
// candidate, a failure points at the setting), then the Python extension's interpreter and
// `fusion-switch` on PATH (the first that passes its probe wins). Probing before starting gives
// one clear message instead of the language client's generic "couldn't create connection".
'use strict';

const { execFile } = require('node:child_process');
const { accessSync, constants, statSync } = require('node:fs');
const path = require('node:path');

const MODULE_ARGS = Object.freeze(['-m', 'fusion_switch', 'serve']);
const BUNDLED_LAUNCHER = path.join('bundled', 'launch.py');
const INSTALL_HINT = 'pip install fusion-switch';

/**
 * @typedef {{command: string, args: string[], source: string, explicit: boolean,
 *            setting?: string}} ServerCandidate
 */

/**
 * @param {{command?: unknown, pythonPath?: unknown}} server  the fusionSwitch.server settings
 * @param {string | undefined} pythonFromExtension  interpreter selected in the Python extension
 * @param {string | undefined} bundled  bundled/launch.py of a platform-specific .vsix (which
 *   carries the server and its libraries): interpreters run it instead of `-m fusion_switch`,
 *   and `python3` on PATH becomes a candidate, so nothing has to be pip-installed
 * @returns {ServerCandidate[]}
 */
function serverCandidates(server, pythonFromExtension, bundled) {
  const interpreterArgs = () => (bundled ? [bundled] : [...MODULE_ARGS]);
  const command = Array.isArray(server.command)
    ? server.command.filter((part) => typeof part === 'string')
    : [];
  if (command.length > 0 && command[0].trim() !== '') {
    return [
      {
        command: command[0],
        args: command.slice(1),
        source: 'setting fusionSwitch.server.command',
        explicit: true,
        setting: 'fusionSwitch.server.command',
      },
    ];
  }
  const pythonPath = typeof server.pythonPath === 'string' ? server.pythonPath.trim() : '';
  if (pythonPath !== '') {
    return [
      {
        command: pythonPath,
        args: interpreterArgs(),
        source: 'setting fusionSwitch.server.pythonPath',
        explicit: true,
        setting: 'fusionSwitch.server.pythonPath',
      },
    ];
  }
  const candidates = [];
  if (pythonFromExtension) {
    candidates.push({
      command: pythonFromExtension,
      args: interpreterArgs(),
      source: 'the Python extension interpreter',
      explicit: false,
    });
  }
  if (bundled) {
    for (const python of ['python3', 'python']) {
      candidates.push({
        command: python,
        args: [bundled],
        source: `\`${python}\` on PATH with the bundled server`,
        explicit: false,
      });
    }
  }
  candidates.push({
    command: 'fusion-switch',
    args: ['serve'],
    source: '`fusion-switch` on PATH',
    explicit: false,
  });
  return candidates;
}

/** The executable a command name resolves to (absolute or via PATH), or undefined. */
function resolveExecutable(command, env = process.env) {
  const usable = (file) => {
    try {
      accessSync(file, constants.X_OK);
      return statSync(file).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/') || command.includes(path.sep)) {
    return usable(command) ? command : undefined;
  }
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    if (dir && usable(path.join(dir, command))) {
      return path.join(dir, command);
    }
  }
  return undefined;
}

/**
 * Checks that a candidate can run the server without starting it: an interpreter must import
 * fusion_switch, `fusion-switch` must answer --version, and a custom server.command must at
 * least name an executable. Resolves to an error text, or undefined when usable.
 * @param {ServerCandidate} candidate
 * @returns {Promise<string | undefined>}
 */
function probe(candidate, run = execFile) {
  if (resolveExecutable(candidate.command) === undefined) {
    return Promise.resolve(`${candidate.command}: not found or not executable`);
  }
  const isModule = candidate.args.join(' ') === MODULE_ARGS.join(' ');
  const isBundled = candidate.args.length === 1 && candidate.args[0].endsWith(BUNDLED_LAUNCHER);
  if (!isModule && !isBundled && candidate.explicit) {
    return Promise.resolve(undefined); // arbitrary command: its arguments are not ours to test
  }
  const args = isBundled
    ? [candidate.args[0], '--check']
    : isModule
      ? ['-c', 'import fusion_switch']
      : ['--version'];
  return new Promise((resolve) => {
    run(candidate.command, args, { timeout: 15000 }, (error, _stdout, stderr) => {
      if (!error) {
        resolve(undefined);
      } else {
        const detail = String(stderr || error.message).trim().split('\n').pop();
        resolve(`${candidate.command} ${args.join(' ')}: ${detail}`);
      }
    });
  });
}

/**
 * Picks the server to start: the first candidate that passes its probe. An explicit setting
 * that fails is reported as such, never silently replaced by a fallback.
 * @returns {Promise<{server?: ServerCandidate, failures: {candidate: ServerCandidate,
 *           error: string}[]}>}
 */
async function chooseServer(candidates, check = probe) {
  const failures = [];
  for (const candidate of candidates) {
    const error = await check(candidate);
    if (error === undefined) {
      return { server: candidate, failures };
    }
    failures.push({ candidate, error });
    if (candidate.explicit) {
      break;
    }
  }
  return { server: undefined, failures };
}

/** The message shown when no server could be started. */
function startFailureMessage(failures) {
  const tried = failures.map((f) => `${f.candidate.source} (${f.error})`).join('; ');
  return (
    'Fusion Switch: cannot start the language server. ' +
    (tried ? `Tried ${tried}. ` : '') +
    `Install it with \`${INSTALL_HINT}\` in your Python environment, or set ` +
    'fusionSwitch.server.pythonPath or fusionSwitch.server.command.'
  );
}

module.exports = {
  MODULE_ARGS,
  BUNDLED_LAUNCHER,
  INSTALL_HINT,
  serverCandidates,
  probe,
  resolveExecutable,
  chooseServer,
  startFailureMessage,
};
