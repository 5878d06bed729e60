// VS Code entry point: starts the fusion-switch language server and wires the editor UI to it.
//
// The server does the work (diagnostics, completion, commands); this file only finds and starts
// it, forwards settings, turns menu clicks into command arguments, and shows the status item.
'use strict';

const vscode = require('vscode');
const { LanguageClient, State } = require('vscode-languageclient/node');

const {
  CLIENT_COMMANDS,
  LANGUAGE_ID,
  SECTION,
  STATUS_NOTIFICATION,
} = require('./contract');
const {
  BUNDLED_LAUNCHER,
  INSTALL_HINT,
  chooseServer,
  serverCandidates,
  startFailureMessage,
} = require('./serverCommand');
const { existsSync } = require('node:fs');
const path = require('node:path');
const { statusText } = require('./status');
const { commandArguments } = require('./commandArgs');
const { confirmationFor } = require('./confirm');
const { statusOfFolder, targetSettingLevel } = require('./scopes');
const { choiceQuestion, pendingChoice, withChoice } = require('./compareChoices');
const { showsReportHere, withReportPolicy } = require('./report');
const { LONG_RUNS, restartQuestion } = require('./longRuns');
const { createRecipeSaver } = require('./recipeEdits');
const { choosesVersion, withChosenVersion } = require('./restorePick');

const CLIENT_ID = 'fusionSwitch'; // also the prefix of the fusionSwitch.trace.server setting
const RUNNING_CONTEXT = 'fusionSwitch.serverRunning';

/** @type {LanguageClient | undefined} */
let client;
/** @type {vscode.OutputChannel} */
let output;
/** @type {vscode.StatusBarItem} */
let statusItem;
/** @type {{target?: unknown, catalogue?: unknown, files?: unknown} | undefined} */
let lastStatus;
let starting;

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  output = vscode.window.createOutputChannel('Fusion Switch', { log: true });
  statusItem = vscode.window.createStatusBarItem('fusionSwitch.status', vscode.StatusBarAlignment.Right, 100);
  statusItem.name = 'Fusion Switch Target';
  statusItem.command = 'fusionSwitch.selectTarget';
  context.subscriptions.push(output, statusItem);

  const handlers = {
    'fusionSwitch.selectTarget': () => selectTarget(context),
    'fusionSwitch.restartServer': () => restartUnlessBusy(context),
    'fusionSwitch.showOutput': () => output.show(true),
  };
  for (const id of CLIENT_COMMANDS) {
    context.subscriptions.push(vscode.commands.registerCommand(id, handlers[id]));
  }

  context.subscriptions.push(
    vscode.window.onDidChangeActiveTextEditor(() => updateStatus()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${SECTION}.server`)) {
        restartUnlessBusy(context);
      } else if (event.affectsConfiguration(SECTION)) {
        tellSettingsChanged();
        updateStatus();
      }
    }),
  );
  updateStatus();
  await start(context);
}

async function deactivate() {
  if (client) {
    await client.stop();
    client = undefined;
  }
}

/** The Python extension's interpreter for the first workspace folder, if it is installed. */
async function pythonFromExtension() {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (api?.environments?.getActiveEnvironmentPath) {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      return resolved?.executable?.uri?.fsPath ?? active?.path;
    }
    return api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
  } catch (error) {
    output.warn(`Python extension did not give an interpreter: ${error}`);
    return undefined;
  }
}

/** The long commands running (kind → how many), and the restart waiting for them to end. */
const inFlight = new Map();
let restartWhenIdle;

/**
 * The language client shows work-done progress in the status bar only (no cancel button), so
 * a comparison or bisection also gets a notification whose Cancel asks the server to stop it
 * (see longRuns.js); while it runs, a restart of the server is asked about first.
 */
function runWithNotification(command, run) {
  const { kind, title, cancel } = LONG_RUNS[command];
  inFlight.set(kind, (inFlight.get(kind) ?? 0) + 1);
  const shown = vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: true },
    (_progress, token) => {
      token.onCancellationRequested(() => {
        vscode.commands.executeCommand(cancel);
      });
      return run();
    },
  );
  return Promise.resolve(shown).finally(() => {
    const left = inFlight.get(kind) - 1;
    if (left > 0) {
      inFlight.set(kind, left);
    } else {
      inFlight.delete(kind);
    }
    if (inFlight.size === 0 && restartWhenIdle) {
      const go = restartWhenIdle;
      restartWhenIdle = undefined;
      go();
    }
  });
}

/** Restarts the server (its settings changed, or Restart Server), asking first while a
 * comparison or bisection runs: a restart stops it. Not now: once it ends. */
async function restartUnlessBusy(context) {
  const question = restartQuestion([...inFlight.keys()]);
  if (!question) {
    return restart(context);
  }
  const answer = await vscode.window.showWarningMessage(
    question.message,
    { modal: true, detail: question.detail },
    question.now,
    question.later,
  );
  if (answer === question.now || inFlight.size === 0) {
    return restart(context); // asked to, or it ended while the question was open
  }
  restartWhenIdle = () => restart(context);
  output.info('The server restarts with its new settings once the running command ends.');
}

/**
 * Runs the comparison; when the dumps hold several steps, ranks or iterations (the answer's
 * `choose`, see compareChoices.js), asks which with a quick pick and runs it again with the one
 * picked.
 * Closing the pick shows the server's message (which names the setting to use instead).
 */
async function compareWithChoices(run, args) {
  let current = args;
  for (let asked = 0; ; asked += 1) {
    const result = await run(current);
    const choice = pendingChoice(result);
    if (!choice) {
      return result;
    }
    const question = choiceQuestion(choice);
    const picked =
      asked < KEYS_TO_ASK
        ? await vscode.window.showQuickPick(question.items, { ...question, ignoreFocusOut: true })
        : undefined;
    if (!picked) {
      vscode.window.showWarningMessage(result.error);
      return result;
    }
    current = withChoice(current, choice.key, picked.label);
  }
}
const KEYS_TO_ASK = 3; // a step, then a rank, then an iteration

/** The report panel, reused by the next Show Report while it is open. */
let reportPanel;

/**
 * window/showDocument: in a remote or browser window the comparison report is shown here, in
 * a webview (see report.js); anything else as vscode-languageclient does it.
 */
async function showDocumentHere(params, token, next) {
  const where = { remoteName: vscode.env.remoteName, web: vscode.env.uiKind === vscode.UIKind.Web };
  if (!showsReportHere(params, where)) {
    return next(params, token);
  }
  try {
    const uri = vscode.Uri.parse(params.uri);
    const html = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    const title = `Fusion Switch report (${path.basename(path.dirname(uri.fsPath))})`;
    if (!reportPanel) {
      reportPanel = vscode.window.createWebviewPanel('fusionSwitch.report', title, vscode.ViewColumn.Active, {
        enableScripts: false,
        localResourceRoots: [],
      });
      reportPanel.onDidDispose(() => {
        reportPanel = undefined;
      });
    }
    reportPanel.title = title;
    reportPanel.webview.html = withReportPolicy(html);
    reportPanel.reveal();
    return { success: true };
  } catch (error) {
    output.warn(`Showing the report ${params.uri} failed: ${error}`);
    return { success: false };
  }
}

let saver;
function recipeSaver() {
  saver ??= createRecipeSaver(vscode.workspace, (message) => output.warn(message));
  return saver;
}

/** Which version Restore Configuration brings back, when the history holds several. */
function pickRestoreVersion(items) {
  return vscode.window.showQuickPick(items, {
    title: 'Fusion Switch: restore the configuration as it was before which change?',
    placeHolder: 'The default comes first',
    ignoreFocusOut: true,
  });
}

/** bundled/launch.py when this is a platform-specific .vsix that carries the server. */
function bundledLauncher(context) {
  const launcher = path.join(context.extensionPath, BUNDLED_LAUNCHER);
  const libs = path.join(context.extensionPath, 'bundled', 'libs');
  return existsSync(launcher) && existsSync(libs) ? launcher : undefined;
}

function start(context) {
  if (!starting) {
    starting = doStart(context).finally(() => {
      starting = undefined;
    });
  }
  return starting;
}

async function doStart(context) {
  statusItem.text = '$(sync~spin) Fusion Switch';
  statusItem.tooltip = 'Starting the fusion-switch language server';
  const settings = vscode.workspace.getConfiguration(SECTION);
  const candidates = serverCandidates(
    { command: settings.get('server.command'), pythonPath: settings.get('server.pythonPath') },
    await pythonFromExtension(),
    bundledLauncher(context),
  );
  const { server, failures } = await chooseServer(candidates);
  for (const failure of failures) {
    output.info(`Not usable: ${failure.candidate.source}: ${failure.error}`);
  }
  if (!server) {
    showStartError(startFailureMessage(failures), failures.at(-1)?.candidate.setting);
    return;
  }
  output.info(`Starting ${[server.command, ...server.args].join(' ')} (from ${server.source})`);

  const serverOptions = {
    command: server.command,
    args: server.args,
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
  };
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: LANGUAGE_ID },
      { scheme: 'untitled', language: LANGUAGE_ID },
    ],
    // The window's values (User + Workspace); the server asks for each configuration's folder
    // itself (workspace/configuration with its scopeUri), see scopes.js.
    initializationOptions: { [SECTION]: windowSettings() },
    outputChannel: output,
    traceOutputChannel: output,
    // Start failures are reported by showStartError with a fix; no second pop-up.
    initializationFailedHandler: () => false,
    middleware: {
      executeCommand: async (command, args, next) => {
        await openFromMenu(args);
        let withUri = withCfgUri(args);
        if (command === 'fusionSwitch.bisect' && !hasJob(withUri)) {
          const job = await askBisectJob();
          if (!job) {
            return undefined; // the user closed the question: nothing runs
          }
          withUri = [{ ...(withUri[0] ?? {}), ...job }, ...withUri.slice(1)];
        }
        const question = confirmationFor(command, withUri);
        if (question) {
          const answer = await vscode.window.showWarningMessage(
            question.message,
            { modal: true, detail: question.detail },
            question.action,
          );
          if (answer !== question.action) {
            return undefined; // cancelled: the file is not touched
          }
        }
        if (command === 'fusionSwitch.compare') {
          return compareWithChoices((args) => runWithNotification(command, () => next(command, args)), withUri);
        }
        if (command === 'fusionSwitch.bisect') {
          return runWithNotification(command, () => next(command, withUri));
        }
        if (choosesVersion(command, withUri)) {
          withUri = await withChosenVersion(withUri, (listing) => next(command, listing), pickRestoreVersion);
          if (!withUri) {
            return undefined; // the user closed the pick: nothing is restored
          }
        }
        return recipeSaver().around(command, withUri, () => next(command, withUri));
      },
      window: {
        showDocument: (params, token, next) => showDocumentHere(params, token, next),
      },
      workspace: {
        // the recipe's edits are saved when the file had no unsaved changes (src/recipeEdits.js)
        handleApplyEdit: (params, next) => recipeSaver().handleApplyEdit(params, next),
      },
    },
  };
  const current = new LanguageClient(CLIENT_ID, 'Fusion Switch', serverOptions, clientOptions);
  current.registerFeature(statusCapability);
  client = current;
  context.subscriptions.push(
    current.onDidChangeState((event) => {
      if (client !== current) {
        return; // a stopped predecessor after a restart
      }
      const running = event.newState === State.Running;
      vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, running);
      if (event.newState === State.Stopped) {
        statusItem.text = '$(error) Fusion Switch';
        statusItem.tooltip = 'The fusion-switch language server is not running. Click for its output.';
        statusItem.command = 'fusionSwitch.showOutput';
      } else if (running) {
        statusItem.command = 'fusionSwitch.selectTarget';
        updateStatus();
      }
    }),
    current.onNotification(STATUS_NOTIFICATION, (params) => {
      lastStatus = params && typeof params === 'object' ? params : undefined;
      updateStatus();
    }),
  );
  try {
    await current.start();
  } catch (error) {
    const message =
      `Fusion Switch: the language server (${[server.command, ...server.args].join(' ')}, ` +
      `from ${server.source}) did not start: ${error?.message ?? error}. ` +
      `Install it with \`${INSTALL_HINT}\` or fix the setting.`;
    client = undefined;
    showStartError(message, server.setting);
  }
}

/**
 * Tells the server, in `capabilities.experimental.fusionSwitch`, that this client shows the
 * `fusionSwitch/status` notification (other editors do not get it).
 */
const statusCapability = {
  fillClientCapabilities(capabilities) {
    capabilities.experimental = {
      ...(capabilities.experimental ?? {}),
      // compareChoices: a comparison's step, rank or iteration is asked with a quick pick here
      [SECTION]: { statusNotification: STATUS_NOTIFICATION, compareChoices: true },
    };
  },
  initialize() {},
  getState: () => ({ kind: 'static' }),
  clear() {},
};

async function restart(context) {
  if (starting) {
    await starting;
  }
  const previous = client;
  client = undefined;
  lastStatus = undefined;
  if (previous) {
    try {
      await previous.stop();
    } catch (error) {
      output.warn(`Stopping the server failed: ${error}`);
    }
  }
  await start(context);
}

/** The fusionSwitch settings of the window (User < Workspace), as plain JSON. */
function windowSettings() {
  return JSON.parse(JSON.stringify(vscode.workspace.getConfiguration(SECTION)));
}

/** Tells the server that settings changed, with no payload: it asks again for the window's
 * and for each folder's (a payload would be one folder's values for the whole window). */
function tellSettingsChanged() {
  if (!client || client.state !== State.Running) {
    return;
  }
  client.sendNotification('workspace/didChangeConfiguration', { settings: null }).catch((error) => {
    output.warn(`Telling the server about changed settings failed: ${error}`);
  });
}

function activeCfgUri() {
  const editor = vscode.window.activeTextEditor;
  return editor && editor.document.languageId === LANGUAGE_ID
    ? editor.document.uri.toString()
    : undefined;
}

/** A menu passes the clicked file's Uri: the server acts only on open configurations (it
 * answered "not open as a fusion switch configuration" for a file not opened first). */
async function openFromMenu(args) {
  const uri = args.length > 0 && args[0] instanceof vscode.Uri ? args[0] : undefined;
  if (uri && !vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) {
    await vscode.workspace.openTextDocument(uri);
  }
}

function hasJob(args) {
  const first = args[0];
  return Boolean(first && typeof first === 'object' && 'job' in first);
}

/** The job of fusionSwitch.bisect from the palette or a menu, which pass none (the server then
 * always answered "bisect needs `job`"): its shell command line, and the fusion_result.json
 * whose fired rules are the candidates (none picked: the one next to the configuration). */
async function askBisectJob() {
  const job = await vscode.window.showInputBox({
    title: 'Bisect fusion rules by re-running your job',
    prompt: "The job's command line, run by sh; {cfg} stands for each trial configuration's path",
    placeHolder: 'bash train.sh --fusion_switch_file {cfg}',
    ignoreFocusOut: true,
  });
  if (!job || !job.trim()) {
    return undefined;
  }
  const picked = await vscode.window.showOpenDialog({
    title: 'fusion_result.json of the fusion-on run (Cancel: the one next to the configuration)',
    canSelectMany: false,
    filters: { 'fusion_result.json': ['json'] },
  });
  const candidates = picked && picked.length ? { fusionResult: picked[0].fsPath } : { allFired: true };
  return { job, shell: true, ...candidates };
}

function withCfgUri(args) {
  const uriString = (value) => (value instanceof vscode.Uri ? value.toString() : undefined);
  return commandArguments(args, uriString, activeCfgUri());
}

function updateStatus() {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.languageId !== LANGUAGE_ID) {
    statusItem.hide();
    return;
  }
  if (client && client.state === State.Running) {
    const configured = vscode.workspace.getConfiguration(SECTION, editor.document.uri).get('target', '');
    const { text, tooltip } = statusText(
      activeFolderStatus(editor.document.uri),
      configured,
      editor.document.uri.toString(),
    );
    statusItem.text = text;
    statusItem.tooltip = tooltip;
  }
  statusItem.show();
}

async function showStartError(message, setting) {
  output.error(message);
  statusItem.text = '$(error) Fusion Switch';
  statusItem.tooltip = message;
  statusItem.command = 'fusionSwitch.showOutput';
  const openSetting = 'Open Setting';
  const install = 'Install in Terminal';
  const retry = 'Retry';
  const choice = await vscode.window.showErrorMessage(message, openSetting, install, retry);
  if (choice === openSetting) {
    await vscode.commands.executeCommand('workbench.action.openSettings', setting ?? `${SECTION}.server`);
  } else if (choice === install) {
    const terminal = vscode.window.createTerminal('Install fusion-switch');
    terminal.show();
    terminal.sendText(`python -m ${INSTALL_HINT}`, false); // the user presses Enter
  } else if (choice === retry) {
    await vscode.commands.executeCommand('fusionSwitch.restartServer');
  }
}

/** Quick pick over the known targets (the setting's `examples`); free text is accepted too. */
async function selectTarget(context) {
  const schema = context.extension.packageJSON.contributes.configuration.properties[`${SECTION}.target`];
  const editor = vscode.window.activeTextEditor;
  const scope = editor && editor.document.languageId === LANGUAGE_ID ? editor.document.uri : undefined;
  const settings = vscode.workspace.getConfiguration(SECTION, scope);
  const current = settings.get('target', '');
  const pick = vscode.window.createQuickPick();
  pick.title = 'Fusion Switch: target (--soc_version or product name)';
  pick.placeholder = current ? `Current: ${current}. Type any --soc_version to use it.` : 'Type or pick a target';
  const known = schema.examples.map((name, index) => ({
    label: name,
    description: schema.enumDescriptions?.[index] ?? '',
  }));
  const none = { label: '', description: 'No target: no target-specific checks' };
  pick.items = [...known, none];
  pick.onDidChangeValue((value) => {
    const typed = value.trim();
    const extra = typed && !known.some((item) => item.label === typed) ? [{ label: typed, description: 'custom' }] : [];
    pick.items = [...extra, ...known, none];
  });
  const chosen = await new Promise((resolve) => {
    pick.onDidAccept(() => resolve(pick.selectedItems[0]));
    pick.onDidHide(() => resolve(undefined));
    pick.show();
  });
  pick.dispose();
  if (chosen === undefined) {
    return;
  }
  await settings.update('target', chosen.label, targetLevel(settings, scope));
}

/** Where Select Target writes (see scopes.js): the active configuration's folder in a
 * multi-root window. */
function targetLevel(settings, scope) {
  const level = targetSettingLevel({
    folders: vscode.workspace.workspaceFolders?.length ?? 0,
    inFolder: Boolean(scope && vscode.workspace.getWorkspaceFolder(scope)),
    folderValue: settings.inspect('target')?.workspaceFolderValue,
  });
  return vscode.ConfigurationTarget[level];
}

/** The server's status for the folder of the configuration `uri` (see scopes.js). */
function activeFolderStatus(uri) {
  return statusOfFolder(lastStatus, vscode.workspace.getWorkspaceFolder(uri)?.uri.toString());
}

module.exports = { activate, deactivate };
