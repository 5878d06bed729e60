// A stand-in for the `vscode` module, enough for the extension and vscode-languageclient to start
// the real server, sync a document, receive diagnostics and run commands in plain Node.
// (VS Code itself cannot be downloaded here, so @vscode/test-electron is not an option.)
// What the real editor does with a call is recorded in `recorded` for the test to check;
// any API the test does not model is an inert callable stand-in (see `inert`).
'use strict';

const { pathToFileURL, fileURLToPath } = require('node:url');
const { readFileSync, writeFileSync } = require('node:fs');


/** A callable, constructible object whose every property is another one (returns itself). */
function inert(path) {
  const target = function () {};
  return new Proxy(target, {
    get(_t, prop) {
      if (prop === 'then') return undefined;
      if (prop === Symbol.iterator) return function* () {};
      if (prop === Symbol.toPrimitive) return () => `[${path}]`;
      if (prop === 'dispose') return () => {};
      return inert(`${path}.${String(prop)}`);
    },
    apply: () => inert(`${path}()`),
    construct: () => inert(`new ${path}`),
  });
}

class Disposable {
  constructor(fn) {
    this._fn = fn;
  }
  static from(...items) {
    return new Disposable(() => items.forEach((d) => d && d.dispose && d.dispose()));
  }
  dispose() {
    if (this._fn) this._fn();
    this._fn = undefined;
  }
}

class EventEmitter {
  constructor() {
    this._listeners = new Set();
    this.event = (listener, thisArg) => {
      const bound = thisArg ? listener.bind(thisArg) : listener;
      this._listeners.add(bound);
      return new Disposable(() => this._listeners.delete(bound));
    };
  }
  fire(value) {
    for (const listener of [...this._listeners]) listener(value);
  }
  dispose() {
    this._listeners.clear();
  }
}

class CancellationTokenSource {
  constructor() {
    const emitter = new EventEmitter();
    this._emitter = emitter;
    this.token = { isCancellationRequested: false, onCancellationRequested: emitter.event };
  }
  cancel() {
    this.token.isCancellationRequested = true;
    this._emitter.fire();
  }
  dispose() {}
}

class CancellationError extends Error {}

class Uri {
  constructor(text) {
    const url = new URL(text);
    this.scheme = url.protocol.slice(0, -1);
    this._text = text;
    this.path = url.pathname;
    this.fsPath = this.scheme === 'file' ? fileURLToPath(url) : url.pathname;
  }
  static parse(text) {
    return new Uri(text);
  }
  static file(path) {
    return new Uri(pathToFileURL(path).href);
  }
  toString() {
    return this._text;
  }
  toJSON() {
    return this._text;
  }
  with() {
    return this;
  }
}

class Position {
  constructor(line, character) {
    this.line = line;
    this.character = character;
  }
}

class Range {
  constructor(a, b, c, d) {
    [this.start, this.end] =
      typeof a === 'number' ? [new Position(a, b), new Position(c, d)] : [a, b];
  }
}

class TabInputText {
  constructor(uri) {
    this.uri = uri;
  }
}
class TabInputTextDiff {}
class TabInputCustom {}
class TabInputNotebook {}

class TextEdit {
  constructor(range, newText) {
    this.range = range;
    this.newText = newText;
  }
}

/** What vscode-languageclient builds from a protocol WorkspaceEdit: text edits per document. */
class WorkspaceEdit {
  constructor() {
    this._entries = [];
  }
  set(uri, edits) {
    // [TextEdit, metadata] pairs or plain TextEdits
    this._entries.push([uri, edits.map((e) => (Array.isArray(e) ? e[0] : e))]);
  }
  entries() {
    return this._entries;
  }
}

class Diagnostic {
  constructor(range, message, severity) {
    Object.assign(this, { range, message, severity });
  }
}

const enums = {
  DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
  StatusBarAlignment: { Left: 1, Right: 2 },
  ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  LogLevel: { Off: 0, Trace: 1, Debug: 2, Info: 3, Warning: 4, Error: 5 },
  DiagnosticTag: { Unnecessary: 1, Deprecated: 2 },
  TextDocumentSaveReason: { Manual: 1, AfterDelay: 2, FocusOut: 3 },
  UIKind: { Desktop: 1, Web: 2 },
  ViewColumn: { Active: -1, Beside: -2, One: 1 },
};

/** The offset of a Position in `text` (UTF-16 units, as the server's positions). */
function offsetAt(text, position) {
  const lines = text.split('\n');
  let offset = 0;
  for (let i = 0; i < position.line && i < lines.length; i++) offset += lines[i].length + 1;
  return offset + position.character;
}

function endOf(text) {
  const lines = text.split('\n');
  return new Position(lines.length - 1, lines.at(-1).length);
}

/** A text document as VS Code hands it to extensions: its buffer (`getText`) changes with
 * edits (`isDirty` then) and is written to disk by `save()`, as VS Code does. */
function textDocument(path, languageId, text, events) {
  const document = {
    uri: Uri.file(path),
    fileName: path,
    languageId,
    version: 1,
    isClosed: false,
    isUntitled: false,
    isDirty: false,
    getText: () => text,
    get lineCount() {
      return text.split('\n').length;
    },
    /** Replace the whole buffer, as typing or an applied edit does. */
    replaceText(newText) {
      const range = new Range(new Position(0, 0), endOf(text));
      const change = { range, rangeOffset: 0, rangeLength: text.length, text: newText };
      text = newText;
      document.version += 1;
      document.isDirty = true;
      events?.changeDocument.fire({ document, contentChanges: [change], reason: undefined });
    },
    save: async () => {
      writeFileSync(path, text);
      document.isDirty = false;
      events?.saveDocument.fire(document);
      return true;
    },
  };
  return document;
}

/**
 * @param {{settings: object, folder: string, folders?: {path: string, settings?: object}[]}} options
 *   `settings`: the User (and Workspace) values, flat keys; `folders`: the workspace folders,
 *   each with values of its own (default: `folder` alone, with none); `remoteName`: as
 *   vscode.env.remoteName in a Remote-SSH window ('ssh-remote')
 */
function createFake({ settings, folder, folders, remoteName }) {
  const roots = (folders ?? [{ path: folder }]).map((f, index) => ({
    path: f.path,
    settings: f.settings ?? {},
    workspaceFolder: { uri: Uri.file(f.path), name: f.path.split('/').pop(), index },
  }));
  /** The workspace folder holding a Uri, a document or a folder (innermost), if any. */
  const rootOf = (scope) => {
    const uri = scope && (scope.fsPath !== undefined ? scope : scope.uri);
    if (!uri || typeof uri.fsPath !== 'string') return undefined;
    const holding = roots.filter((r) => uri.fsPath === r.path || uri.fsPath.startsWith(`${r.path}/`));
    return holding.sort((x, y) => y.path.length - x.path.length)[0];
  };
  const recorded = {
    commands: new Map(), // id -> callback
    executed: [], // [id, ...args] of executeCommand
    diagnostics: new Map(), // uri string -> Diagnostic[]
    messages: [], // [level, text]
    questions: [], // titles of the input boxes and dialogs shown
    picks: [], // {items, title} of each quick pick shown
    statusItems: [],
    log: [],
    updates: [], // {key, value, target, folder} of every settings update
    external: [], // URIs given to env.openExternal (the local browser)
    progress: [], // {options, cancel(), done} of every window.withProgress
    webviews: [], // panels created: {viewType, title, options, webview: {html}}
  };
  const events = {
    openDocument: new EventEmitter(),
    activeEditor: new EventEmitter(),
    configuration: new EventEmitter(),
    tabs: new EventEmitter(),
    visibleEditors: new EventEmitter(),
    changeDocument: new EventEmitter(),
    saveDocument: new EventEmitter(),
  };
  const tabGroup = { tabs: [], isActive: true, viewColumn: 1 };
  const documents = [];
  // what the user answers (undefined: the question was closed); quickPick: the label picked,
  // or a function of the items shown giving the one picked
  const answers = { inputBox: undefined, openDialog: undefined, quickPick: undefined };
  const labelOf = (item) => (typeof item === 'string' ? item : item.label);
  const window = {
    activeTextEditor: undefined,
    visibleTextEditors: [],
    tabGroups: { all: [tabGroup], onDidChangeTabs: events.tabs.event },
    onDidChangeActiveTextEditor: events.activeEditor.event,
    onDidChangeVisibleTextEditors: events.visibleEditors.event,
    createOutputChannel: (name) => {
      const line = (level) => (text) => recorded.log.push(`[${level}] ${text}`);
      return {
        name,
        append: line('append'),
        appendLine: line('line'),
        trace: line('trace'),
        debug: line('debug'),
        info: line('info'),
        warn: line('warn'),
        error: line('error'),
        replace: () => {},
        clear: () => {},
        show: () => {},
        hide: () => {},
        dispose: () => {},
        logLevel: enums.LogLevel.Trace,
        onDidChangeLogLevel: new EventEmitter().event,
      };
    },
    createWebviewPanel: (viewType, title, column, options) => {
      const disposed = new EventEmitter();
      const panel = {
        viewType,
        title,
        column,
        options,
        webview: { html: '' },
        revealed: 0,
        reveal() {
          panel.revealed += 1;
        },
        onDidDispose: disposed.event,
        dispose: () => disposed.fire(),
      };
      recorded.webviews.push(panel);
      return panel;
    },
    createStatusBarItem: (id) => {
      const item = { id, shown: false, show() { this.shown = true; }, hide() { this.shown = false; }, dispose() {} };
      recorded.statusItems.push(item);
      return item;
    },
    showErrorMessage: async (text) => void recorded.messages.push(['error', text]),
    showWarningMessage: async (text) => void recorded.messages.push(['warning', text]),
    showInformationMessage: async (text) => void recorded.messages.push(['info', text]),
    // recorded with a `cancel()` that acts as the notification's Cancel button
    withProgress: (options, task) => {
      const source = new CancellationTokenSource();
      const run = { options, cancel: () => source.cancel(), done: false };
      recorded.progress.push(run);
      return Promise.resolve(task({ report() {} }, source.token)).finally(() => {
        run.done = true;
      });
    },
    // what the user answers, set by a test (undefined: the question was closed)
    showInputBox: async (options) => {
      recorded.questions.push(options.title ?? options.prompt);
      return answers.inputBox;
    },
    showOpenDialog: async (options) => {
      recorded.questions.push(options.title);
      return answers.openDialog;
    },
    showQuickPick: async (items, options) => {
      recorded.questions.push(options?.title ?? options?.placeHolder);
      const list = await items;
      recorded.picks.push({ items: list, title: options?.title ?? options?.placeHolder });
      if (typeof answers.quickPick === 'function') return answers.quickPick(list);
      return list.find((item) => labelOf(item) === answers.quickPick);
    },
    /** Shown: the item labelled `answers.quickPick` is accepted (typed first if not listed). */
    createQuickPick: () => {
      const accept = new EventEmitter();
      const hidden = new EventEmitter();
      const typed = new EventEmitter();
      const pick = {
        items: [],
        selectedItems: [],
        value: '',
        onDidAccept: accept.event,
        onDidHide: hidden.event,
        onDidChangeValue: typed.event,
        show() {
          recorded.questions.push(pick.title);
          const answer = answers.quickPick;
          const wanted = typeof answer === 'function' ? answer(pick.items)?.label : answer;
          if (wanted === undefined) return hidden.fire();
          if (!pick.items.some((item) => item.label === wanted)) {
            pick.value = wanted;
            typed.fire(wanted);
          }
          pick.selectedItems = pick.items.filter((item) => item.label === wanted);
          accept.fire();
        },
        hide: () => hidden.fire(),
        dispose() {},
      };
      return pick;
    },
  };
  const configuration = (section, scope) => {
    const prefix = section ? `${section}.` : '';
    const root = rootOf(scope);
    const layered = { ...settings, ...(root ? root.settings : {}) };
    const nestedUnder = (start) => {
      const nested = {};
      for (const [key, value] of Object.entries(layered)) {
        if (!key.startsWith(start)) continue;
        const parts = key.slice(start.length).split('.');
        let node = nested;
        for (const part of parts.slice(0, -1)) node = node[part] ??= {};
        node[parts.at(-1)] = value;
      }
      return nested;
    };
    // a key's value, or the object of the keys under it (get('fusionSwitch'), as VS Code)
    const lookup = (key) => {
      const value = layered[`${prefix}${key}`];
      if (value !== undefined) return value;
      const nested = nestedUnder(`${prefix}${key}.`);
      return Object.keys(nested).length ? nested : undefined;
    };
    return {
      ...nestedUnder(prefix),
      get: (key, fallback) => (lookup(key) === undefined ? fallback : lookup(key)),
      has: (key) => lookup(key) !== undefined,
      inspect: (key) => ({
        key,
        globalValue: settings[`${prefix}${key}`],
        workspaceFolderValue: root ? root.settings[`${prefix}${key}`] : undefined,
      }),
      update: async (key, value, target) => {
        const full = `${prefix}${key}`;
        const inFolder = target === enums.ConfigurationTarget.WorkspaceFolder && root;
        recorded.updates.push({ key: full, value, target, folder: inFolder ? root.path : undefined });
        (inFolder ? root.settings : settings)[full] = value;
        events.configuration.fire({ affectsConfiguration: (s) => full.startsWith(s) });
      },
    };
  };
  const workspace = {
    workspaceFolders: roots.map((r) => r.workspaceFolder),
    textDocuments: documents,
    notebookDocuments: [],
    getConfiguration: configuration,
    getWorkspaceFolder: (uri) => rootOf(uri)?.workspaceFolder,
    onDidOpenTextDocument: events.openDocument.event,
    onDidChangeConfiguration: events.configuration.event,
    onDidChangeTextDocument: events.changeDocument.event,
    onDidSaveTextDocument: events.saveDocument.event,
    // applied to the open documents' buffers, never saved (as VS Code does)
    applyEdit: async (edit) => {
      for (const [uri, edits] of edit.entries ? edit.entries() : []) {
        const document = documents.find((d) => d.uri.toString() === uri.toString());
        if (!document) return false;
        let text = document.getText();
        const spans = edits.map((e) => [offsetAt(text, e.range.start), offsetAt(text, e.range.end), e.newText]);
        for (const [start, end, newText] of spans.sort((a, b) => b[0] - a[0])) {
          text = text.slice(0, start) + newText + text.slice(end);
        }
        document.replaceText(text);
      }
      return true;
    },
    save: async (uri) => {
      const document = documents.find((d) => d.uri.toString() === uri.toString());
      return document && (await document.save()) ? uri : undefined;
    },
    fs: { readFile: async (uri) => new Uint8Array(readFileSync(uri.fsPath)) },
    // opened without an editor (as VS Code does for openTextDocument): synced, not shown
    openTextDocument: async (uri) => {
      const document = textDocument(uri.fsPath, 'fusion-switch', readFileSync(uri.fsPath, 'utf8'), events);
      documents.push(document);
      events.openDocument.fire(document);
      return document;
    },
  };
  const languages = {
    match: (selector, document) => {
      const filters = Array.isArray(selector) ? selector : [selector];
      return filters.some(
        (f) =>
          (typeof f === 'string' ? f === document.languageId : true) &&
          (!f.language || f.language === document.languageId) &&
          (!f.scheme || f.scheme === document.uri.scheme),
      )
        ? 10
        : 0;
    },
    createDiagnosticCollection: () => ({
      set: (uri, diagnostics) => {
        if (Array.isArray(uri)) {
          for (const [u, d] of uri) recorded.diagnostics.set(u.toString(), d);
        } else {
          recorded.diagnostics.set(uri.toString(), diagnostics);
        }
      },
      delete: (uri) => recorded.diagnostics.delete(uri.toString()),
      clear: () => recorded.diagnostics.clear(),
      forEach: () => {},
      dispose: () => {},
    }),
  };
  const commands = {
    registerCommand: (id, callback) => {
      if (recorded.commands.has(id)) throw new Error(`command '${id}' already exists`);
      recorded.commands.set(id, callback);
      return new Disposable(() => recorded.commands.delete(id));
    },
    executeCommand: async (id, ...args) => {
      recorded.executed.push([id, ...args]);
      const callback = recorded.commands.get(id);
      return callback ? callback(...args) : undefined;
    },
  };
  const known = {
    version: '1.91.0',
    env: {
      appName: 'Fake Code',
      language: 'en',
      machineId: 'test',
      remoteName,
      uiKind: enums.UIKind.Desktop,
      // what VS Code answers even when the local browser cannot open the file
      openExternal: async (uri) => {
        recorded.external.push(uri.toString());
        return true;
      },
    },
    extensions: { getExtension: () => undefined },
    Disposable,
    EventEmitter,
    CancellationTokenSource,
    CancellationError,
    Uri,
    Position,
    Range,
    TextEdit,
    WorkspaceEdit,
    Diagnostic,
    TabInputText,
    TabInputTextDiff,
    TabInputCustom,
    TabInputNotebook,
    ...enums,
    window,
    workspace,
    languages,
    commands,
  };
  const vscode = new Proxy(known, {
    get: (target, prop) => (prop in target ? target[prop] : inert(`vscode.${String(prop)}`)),
  });
  for (const area of ['window', 'workspace', 'languages', 'commands', 'env']) {
    known[area] = new Proxy(known[area], {
      get: (target, prop) => (prop in target ? target[prop] : inert(`vscode.${area}.${String(prop)}`)),
    });
  }
  /** Opens a document in a tab and makes it the active editor, as a user opening the file. */
  const open = (path, languageId, text) => {
    const document = textDocument(path, languageId, text, events);
    const tab = { input: new TabInputText(document.uri), label: path, isActive: true };
    tabGroup.tabs.push(tab);
    events.tabs.fire({ opened: [tab], closed: [], changed: [] });
    documents.push(document);
    events.openDocument.fire(document);
    show(document);
    return document;
  };
  /** Makes an open document the active editor, as a user clicking its tab. */
  const show = (document) => {
    window.activeTextEditor = { document, viewColumn: 1 };
    window.visibleTextEditors = [window.activeTextEditor];
    events.visibleEditors.fire(window.visibleTextEditors);
    events.activeEditor.fire(window.activeTextEditor);
  };
  return { vscode, recorded, open, show, answers };
}

module.exports = { createFake };
