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

function createFake({ settings, folder }) {
  const recorded = {
    commands: new Map(), // id -> callback
    executed: [], // [id, ...args] of executeCommand
    diagnostics: new Map(), // uri string -> Diagnostic[]
    messages: [], // [level, text]
    questions: [], // titles of the input boxes and dialogs shown
    picks: [], // {items, title} of each quick pick shown
    statusItems: [],
    log: [],
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
  // quickPick: a function of the items shown, giving the one picked (undefined: closed)
  const answers = { inputBox: undefined, openDialog: undefined, quickPick: () => undefined };
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
    createStatusBarItem: (id) => {
      const item = { id, shown: false, show() { this.shown = true; }, hide() { this.shown = false; }, dispose() {} };
      recorded.statusItems.push(item);
      return item;
    },
    showErrorMessage: async (text) => void recorded.messages.push(['error', text]),
    showWarningMessage: async (text) => void recorded.messages.push(['warning', text]),
    showInformationMessage: async (text) => void recorded.messages.push(['info', text]),
    withProgress: (_options, task) => task({ report() {} }, new CancellationTokenSource().token),
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
      recorded.picks.push({ items: await items, title: options?.title ?? options?.placeHolder });
      return answers.quickPick(await items);
    },
  };
  const configuration = (section) => {
    const prefix = section ? `${section}.` : '';
    const lookup = (key) => settings[`${prefix}${key}`];
    const nested = {};
    for (const [key, value] of Object.entries(settings)) {
      if (!key.startsWith(prefix)) continue;
      const parts = key.slice(prefix.length).split('.');
      let node = nested;
      for (const part of parts.slice(0, -1)) node = node[part] ??= {};
      node[parts.at(-1)] = value;
    }
    return {
      ...nested,
      get: (key, fallback) => (lookup(key) === undefined ? fallback : lookup(key)),
      has: (key) => lookup(key) !== undefined,
      inspect: (key) => ({ key, globalValue: lookup(key) }),
      update: async (key, value) => {
        settings[`${prefix}${key}`] = value;
        events.configuration.fire({ affectsConfiguration: (s) => `${prefix}${key}`.startsWith(s) });
      },
    };
  };
  const workspace = {
    workspaceFolders: [{ uri: Uri.file(folder), name: 'project', index: 0 }],
    textDocuments: documents,
    notebookDocuments: [],
    getConfiguration: configuration,
    getWorkspaceFolder: () => workspace.workspaceFolders[0],
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
    env: { appName: 'Fake Code', language: 'en', openExternal: async () => true, machineId: 'test' },
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
    window.activeTextEditor = { document, viewColumn: 1 };
    window.visibleTextEditors = [window.activeTextEditor];
    events.visibleEditors.fire(window.visibleTextEditors);
    events.activeEditor.fire(window.activeTextEditor);
    return document;
  };
  return { vscode, recorded, open, answers };
}

module.exports = { createFake };
