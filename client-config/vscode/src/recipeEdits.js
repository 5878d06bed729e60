// The recipe's edits (All Off, Turn Suspected Rules Off, Restore) reach VS Code as
// workspace/applyEdit, which VS Code applies to the buffer and never saves: the server said
// "all fusion is off, build and dump" while the file CANN reads was unchanged (a review). A
// configuration that had no unsaved changes when such a command started is saved right after
// its edit is applied, inside the applyEdit request, so that the server finds the file saved
// when the edit is answered and says so; one holding unsaved edits of the user's is left for
// the user to save (saving it would save those too), and the server says it is not saved.
'use strict';

const SAVED_AFTER_EDIT = Object.freeze([
  'fusionSwitch.allOff',
  'fusionSwitch.applySuspects',
  'fusionSwitch.restore',
]);

/** The URIs a protocol WorkspaceEdit changes. */
function editedUris(edit) {
  if (!edit || typeof edit !== 'object') {
    return [];
  }
  const uris = [];
  for (const change of Array.isArray(edit.documentChanges) ? edit.documentChanges : []) {
    const uri = change && change.textDocument && change.textDocument.uri;
    if (typeof uri === 'string') {
      uris.push(uri);
    }
  }
  if (edit.changes && typeof edit.changes === 'object') {
    uris.push(...Object.keys(edit.changes));
  }
  return uris;
}

/**
 * @param {{textDocuments: readonly {uri: {toString(): string}, isDirty: boolean, save(): Thenable<boolean>}[]}} workspace
 * @param {(message: string) => void} [warn]
 */
function createRecipeSaver(workspace, warn = () => {}) {
  const clean = new Map(); // cfgUri -> commands in flight that found it without unsaved changes
  const find = (uri) => workspace.textDocuments.find((d) => d.uri.toString() === uri);
  return {
    /** Runs the command (`run`), noting whether its configuration had unsaved changes. */
    async around(command, args, run) {
      const first = args && args[0];
      const uri = SAVED_AFTER_EDIT.includes(command) && first && typeof first === 'object' ? first.cfgUri : undefined;
      const document = typeof uri === 'string' ? find(uri) : undefined;
      if (!document || document.isDirty) {
        return run();
      }
      clean.set(uri, (clean.get(uri) ?? 0) + 1);
      try {
        return await run();
      } finally {
        const left = (clean.get(uri) ?? 1) - 1;
        if (left > 0) {
          clean.set(uri, left);
        } else {
          clean.delete(uri);
        }
      }
    },
    /** middleware.workspace.handleApplyEdit: apply, then save the noted documents it changed. */
    async handleApplyEdit(params, next) {
      const result = await next(params);
      if (!result || result.applied !== true) {
        return result;
      }
      for (const uri of editedUris(params && params.edit)) {
        const document = clean.has(uri) ? find(uri) : undefined;
        if (document && document.isDirty) {
          try {
            if (!(await document.save())) {
              warn(`Fusion Switch: ${uri} was not saved`);
            }
          } catch (error) {
            warn(`Fusion Switch: saving ${uri} failed: ${error}`);
          }
        }
      }
      return result;
    },
  };
}

module.exports = { SAVED_AFTER_EDIT, createRecipeSaver, editedUris };
