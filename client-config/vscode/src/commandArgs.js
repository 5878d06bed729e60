// Arguments for the server's commands (issue 4: one object argument whose `cfgUri` names the
// configuration). Menus pass the clicked file's Uri and the palette passes nothing; both become
// `{cfgUri}`. Arguments the server built itself (code lenses) are kept as they are.
'use strict';

/**
 * @param {unknown[]} args  what VS Code passed to the command
 * @param {(value: unknown) => string | undefined} uriString  the URI text when value is a Uri
 * @param {string | undefined} activeCfgUri  URI of the active fusion-switch editor, if any
 * @returns {unknown[]}
 */
function commandArguments(args, uriString, activeCfgUri) {
  if (args.length > 0) {
    const fromMenu = uriString(args[0]);
    if (fromMenu !== undefined) {
      return [{ cfgUri: fromMenu }];
    }
    const first = args[0];
    if (first && typeof first === 'object' && !Array.isArray(first) && !('cfgUri' in first) && activeCfgUri) {
      return [{ ...first, cfgUri: activeCfgUri }, ...args.slice(1)];
    }
    return args;
  }
  return activeCfgUri ? [{ cfgUri: activeCfgUri }] : [{}];
}

module.exports = { commandArguments };
